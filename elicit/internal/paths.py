"""Checks of the paths a command reads or writes, made before any work starts (not minutes
later, with the operating system's words), saying what is wrong and what to give instead.
"""

from __future__ import annotations

import os
from pathlib import Path

from elicit.errors import ElicitError


def _nearest_existing(path: Path) -> Path:
    return next((p for p in (path, *path.parents) if p.exists() or p.is_symlink()), Path("."))


def check_output_folder(path: str | os.PathLike, option: str = "--out",
                        kept: str = "an earlier run's folder (the run resumes there)") -> Path:
    """Refuse an output folder that cannot be made or written (``kept``: what an existing
    folder is to the command); returns ``path`` as a Path."""
    path = Path(path)
    found = _nearest_existing(path)
    if not found.is_dir():
        if found == path:
            raise ElicitError(f"{option} {path} is a file, not a folder: give the name of a "
                              f"new folder (it is created) or of {kept}")
        raise ElicitError(f"{option} {path}: {found} is a file, so no folder can be made "
                          "inside it; give a folder path")
    if not os.access(found, os.W_OK | os.X_OK):
        raise ElicitError(f"{option} {path}: the folder {found} is read-only; choose a folder "
                          "you can write to")
    return path


def check_output_file(path: str | os.PathLike, option: str) -> Path:
    """Refuse an output file that cannot be written; returns ``path`` as a Path."""
    path = Path(path)
    if path.is_dir():
        raise ElicitError(f"{option} {path} is a folder; give a file name")
    found = _nearest_existing(path.parent)
    if not found.is_dir():
        raise ElicitError(f"{option} {path}: {found} is a file, so it cannot hold {path.name}; "
                          "give a path in a folder")
    check_output_folder(path.parent, option)
    return path


def check_input_file(path: str | os.PathLike, option: str) -> Path:
    """Refuse an input file that does not exist or is a folder; returns ``path`` as a Path."""
    path = Path(path)
    if path.is_dir():
        raise ElicitError(f"{option} {path} is a folder, not a file; give the path of the file "
                          "itself")
    if not path.is_file():
        raise ElicitError(f"{option} file {path} does not exist")
    return path


def check_not_input(path: str | os.PathLike, inputs: dict[str, str | os.PathLike | None],
                    option: str = "--out") -> Path:
    """Refuse to write ``path`` when it is one of the ``inputs`` (``{what: file}``), also
    through a link, even with ``--overwrite``; returns ``path`` as a Path."""
    path = Path(path)
    if not path.exists():
        return path
    for what, f in inputs.items():
        if f is not None and Path(f).exists() and os.path.samefile(path, f):
            raise ElicitError(f"{option} {path} is the {what} file: elicit never overwrites "
                              "an input; choose another name for the output")
    return path
