"""The routines that run by themselves (`[schedule]`, `tht schedule`, docs/operations.md).

- `timing`: when a routine is due (`at` a time of day in a zone, `every` an interval).
- `routines`: what each routine does (the same code as the commands a person runs).
- `scheduler`: queue the due runs once per key, run them under the queue's lease, and say
  which routines are late or failed.
- `hooks`: a forge's push webhook, its signature checked, mapped to the source it names.
"""
