from pathlib import Path

import pytest

from thoth.errors import ProblemsError
from thoth.evaluation.evidence import load_evaluation


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "evaluation.yaml"
    path.write_text(text)
    return path


def test_each_profile_is_required(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """questions:
  - {id: a, question: q, purpose: rewriting, profile: lexical, expected: [evidence:x]}
""",
    )
    with pytest.raises(ProblemsError) as info:
        load_evaluation(path)
    assert "mixed, semantic" in info.value.problems[0].message


@pytest.mark.parametrize(
    "text,fragment",
    [
        ("questions: []\n", "no questions"),
        (
            "questions:\n  - {id: a, question: q, purpose: chat, profile: lexical, expected: [x]}\n",
            "Input should be",
        ),
        ("questions: [\n", "not valid YAML"),
    ],
)
def test_bad_evaluation_files(tmp_path: Path, text: str, fragment: str) -> None:
    with pytest.raises(ProblemsError) as info:
        load_evaluation(write(tmp_path, text))
    assert fragment in str(info.value)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ProblemsError, match="missing"):
        load_evaluation(tmp_path / "nope.yaml")
