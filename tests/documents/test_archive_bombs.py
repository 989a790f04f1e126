"""Issue 22, point 10: DOCX and XLSX are ZIP archives; one whose entries would inflate past the
documented limits is refused from its declared sizes, before any reader inflates it. A crafted
archive of about 1 MB that inflates to 1 GB is refused in well under a second and without
allocating it."""

from __future__ import annotations

import resource
import struct
import time
import zipfile
import zlib
from pathlib import Path

import pytest

from thoth.documents.extract import ExtractionError, extract

GIB = 1024**3


def deflated_zeros(size: int) -> tuple[bytes, int]:
    """`size` zero bytes deflated (raw deflate, as ZIP stores it), and their CRC-32."""
    chunk = bytes(1024 * 1024)
    packer = zlib.compressobj(9, zlib.DEFLATED, -15)
    parts = [packer.compress(chunk) for _ in range(size // len(chunk))]
    parts.append(packer.flush())
    crc = 0
    for _ in range(size // len(chunk)):
        crc = zlib.crc32(chunk, crc)
    return b"".join(parts), crc


def bomb(path: Path, name: str, size: int) -> Path:
    """A valid ZIP with one entry `name` of `size` zero bytes, written without ever holding the
    inflated content (the central directory declares the true size)."""
    data, crc = deflated_zeros(size)
    local = (
        struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, 0, 8, 0, 0, crc, len(data), size, len(name), 0)
        + name.encode()
    )
    central = struct.pack(
        "<IHHHHHHIIIHHHHHII",
        0x02014B50, 20, 20, 0, 8, 0, 0, crc, len(data), size, len(name), 0, 0, 0, 0, 0, 0,
    ) + name.encode()  # fmt: skip
    end = struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, 1, 1, len(central), len(local) + len(data), 0)
    path.write_bytes(local + data + central + end)
    return path


@pytest.mark.parametrize(
    ("suffix", "entry"), [(".docx", "word/document.xml"), (".xlsx", "xl/worksheets/sheet1.xml")]
)
def test_a_gigabyte_bomb_is_refused_before_inflating(
    tmp_path: Path, suffix: str, entry: str
) -> None:
    path = bomb(tmp_path / f"bomba{suffix}", entry, GIB)
    assert path.stat().st_size < 2 * 1024 * 1024
    with zipfile.ZipFile(path) as archive:  # a well-formed archive: the sizes are declared
        assert archive.getinfo(entry).file_size == GIB
    peak_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.monotonic()
    with pytest.raises(ExtractionError) as caught:
        extract(path)
    assert time.monotonic() - start < 5
    grown_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - peak_before
    assert grown_kib < 64 * 1024  # never near the gigabyte
    [problem] = caught.value.problems
    assert problem.code == "archive_too_large" and entry in problem.message
    assert "refused before inflating it" in problem.message


def test_a_highly_compressed_entry_is_refused_by_its_ratio(tmp_path: Path) -> None:
    path = bomb(tmp_path / "r.docx", "word/document.xml", 64 * 1024 * 1024)
    with pytest.raises(ExtractionError) as caught:
        extract(path)
    assert "to 1 (limit 200 to 1)" in caught.value.problems[0].message


def test_an_ordinary_docx_still_reads(tmp_path: Path) -> None:
    import docx

    document = docx.Document()
    document.add_heading("Procedura", 1)
    document.add_paragraph("Il testo della procedura. " * 200)
    document.save(str(tmp_path / "ok.docx"))
    assert extract(tmp_path / "ok.docx").blocks
