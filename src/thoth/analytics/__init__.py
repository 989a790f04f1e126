"""Level 3: numbers are computed, not retrieved (seed 004). Reviewed catalog queries on the
views of a read-only analytics store; the first fork (text or numbers) chooses a query and its
parameters, by similarity offline or with one function call of a model; every number carries
its query, parameters and data date.

Import the module you need (`branch`, `catalog`, `check`, `routing`, `store` ...): this package
imports nothing itself, so that checking a catalog does not load the answer engine."""
