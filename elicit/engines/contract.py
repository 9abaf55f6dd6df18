"""A Stan program as the engines read it (``stanc --info``), and the contract it must honour:
the data and parameter names of its model (docs/stan.md). ``#include`` lines are inlined, as
PyStan has no include path; the inlined text is what every engine compiles and hashes.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import os
import re
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

import numpy as np

from elicit.errors import ElicitError, EngineUnavailable
from elicit.internal.paths import check_input_file
from elicit.model.layout import ParamLayout
from elicit.model.spec import contract_data, contract_params
from elicit.model.stan_data import Declared, declared, part_fields
from elicit.model.variants import PAPER, get_model


def stan_folder() -> Path:
    """The shipped programs' folder: ``elicit/stan/`` installed, ``stan/`` in a checkout."""
    pkg = Path(__file__).resolve().parents[1]  # the elicit package folder
    for folder in (pkg / "stan", pkg.parent / "stan"):
        if (folder / "elicit.stan").is_file():
            return folder
    raise FileNotFoundError(f"the shipped Stan program is missing from {pkg / 'stan'}; "
                            "reinstall elicit")


_NO_STANC = ("reading a Stan program needs the Stan compiler stanc, which comes with PyStan "
             "(pip install 'elicit[pystan]') and with CmdStan; neither was found")


def _httpstan_stanc() -> Path | None:
    # Found, not imported: importing httpstan starts its web framework.
    spec = importlib.util.find_spec("httpstan")
    return None if spec is None or spec.origin is None else Path(spec.origin).parent / "stanc"


def _cmdstan_stanc() -> Path | None:
    try:
        import cmdstanpy

        return Path(cmdstanpy.cmdstan_path()) / "bin" / "stanc"
    except Exception:  # ImportError, or ValueError without a valid installation
        return None


def find_stanc(engine: str | None = None) -> Path:
    """The stanc of an engine's Stan: ``"pystan"`` (httpstan's), ``"cmdstan"``, or ``None``:
    whichever is installed, CmdStan's first; :class:`EngineUnavailable` if none."""
    finders = {"pystan": (_httpstan_stanc,), "cmdstan": (_cmdstan_stanc,),
               None: (_cmdstan_stanc, _httpstan_stanc)}[engine]
    for find in finders:
        if (stanc := find()) is not None and stanc.is_file():
            return stanc
    raise EngineUnavailable(_NO_STANC)


def _one_line(message: str) -> str:
    """stanc's error as one line: its first line (where) and its last paragraph (what)."""
    lines = [ln.strip() for ln in message.strip().splitlines()]
    if not lines:
        return "stanc failed without a message"
    last_rule = max((k for k, ln in enumerate(lines) if ln.startswith("---")), default=0)
    what = " ".join(ln for ln in lines[last_rule + 1:] if ln)
    head = lines[0].rstrip(":")
    return f"{head}: {what}" if what and what != head else head


#: an include directive, as stanc accepts it: ``#include file``, ``"file"`` or ``<file>``
_INCLUDE = re.compile(r'^[ \t]*#include[ \t]+["<]?([^"<>\s]+)[">]?[ \t]*$')
#: where each line of an inlined program was written: its file and line number
Lines = tuple[tuple[Path, int], ...]


def include_paths(path: Path) -> tuple[Path, ...]:
    """Where the includes of ``path`` are found: its own folder, then the shipped one."""
    own = path.resolve().parent
    shipped = stan_folder()
    return (own,) if own == shipped else (own, shipped)


def inline_includes(path: Path, paths: tuple[Path, ...]) -> tuple[str, Lines]:
    """The text of ``path`` with every ``#include`` line replaced by the (inlined) file it
    names, and the file and line number each of its lines was written in."""

    def expand(text: str, file: Path, chain: tuple[Path, ...]) -> list[tuple[str, Path, int]]:
        out = []
        for k, line in enumerate(text.split("\n"), 1):
            if (m := _INCLUDE.match(line)) is None:
                out.append((line, file, k))
                continue
            name = m.group(1)
            found = next((p / name for p in paths if (p / name).is_file()), None)
            if found is None:
                raise ElicitError(f"{path}: #include {name} is in none of "
                                  f"{', '.join(map(str, paths))}")
            if found in chain:
                raise ElicitError(f"{path}: #include {name} includes itself")
            out += expand(found.read_text().rstrip("\n"), found, (*chain, found))
        return out

    lines = expand(path.read_text(), path, (path.resolve(),))
    return "\n".join(text for text, _, _ in lines), tuple((f, k) for _, f, k in lines)


@dataclass(frozen=True)
class StanProgramFile:
    """A program: its file, inlined text, and data and parameter declarations in order."""

    path: Path
    code: str
    data: Mapping[str, Declared]
    params: Mapping[str, Declared]
    lines: Lines  #: where each line of ``code`` was written (:func:`inline_includes`)

    def in_source(self, text: str, copy: Path) -> str:
        """``text`` with each line of ``copy`` (a file of ``code``) it names as Stan does
        ("'name', line N") named by the file and line that line was written in."""
        def one(m: re.Match) -> str:
            k = int(m.group(1))
            if not 1 <= k <= len(self.lines):
                return m.group(0)
            return f"'{self.lines[k - 1][0]}', line {self.lines[k - 1][1]}"

        return re.sub(rf"'(?:[^']*/)?{re.escape(copy.name)}', line (\d+)", one, text)

    def stan_data(self, data: dict[str, Any]) -> dict[str, Any]:
        """``data`` under the program's names, a one-entry array as a declared scalar."""
        out = {}
        for name, decl in self.data.items():
            value = data[name]
            if decl.dims == 0 and np.ndim(value) == 1 and np.size(value) == 1:
                value = np.asarray(value).item()
            out[name] = value
        return out

    def params_to_stan(self, lay: ParamLayout, theta: np.ndarray) -> dict[str, Any]:
        """theta as the program's named parameters (a vector or array block as a list)."""
        return {b.stan: (theta[lay[b.name]].tolist() if b.vector or self.params[b.stan].dims > 0
                         else float(theta[lay[b.name]][0]))
                for b in lay.blocks}

    def entries(self, lay: ParamLayout) -> list[tuple[str, int | None]]:
        """The Stan name of each entry of theta with its index from 1 (None: a scalar)."""
        return [(b.stan, k) for b in lay.blocks for k in
                (range(1, b.size + 1) if b.vector or self.params[b.stan].dims > 0 else (None,))]


def _declarations(section: dict) -> Mapping[str, Declared]:
    return MappingProxyType({name: Declared(d["type"], int(d["dimensions"]))
                             for name, d in section.items()})


@functools.lru_cache(maxsize=64)
def _info(stanc: str, path: str, paths: tuple[Path, ...], code: str) -> dict:
    # keyed by the inlined text too: an edit of an included file is a new program
    run = subprocess.run([stanc, "--info", "--include-paths=" + ",".join(map(str, paths)), path],
                         capture_output=True, text=True, env={**os.environ, "LC_ALL": "C"})
    if run.returncode != 0:
        raise ElicitError(f"{path} is not a valid Stan program: "
                          f"{_one_line(run.stderr or run.stdout)}")
    return json.loads(run.stdout)


def read_program(path: str | Path, stanc: Path | None = None) -> StanProgramFile:
    """Read the Stan program ``path`` (``stanc``: :func:`find_stanc`'s by default); a
    one-line ElicitError if the file does not exist or stanc refuses it."""
    path = check_input_file(path, "Stan")
    paths = include_paths(path)
    code, lines = inline_includes(path, paths)
    info = _info(str(stanc or find_stanc()), str(path), paths, code)
    return StanProgramFile(path, code, _declarations(info["inputs"]),
                           _declarations(info["parameters"]), lines)


def _unsuppliable(prog: StanProgramFile, variant: str, model: str) -> list[str]:
    """The program's data that elicit cannot pass it, each with why."""
    m = get_model(model)
    fields = part_fields(m.parts)
    required = set(contract_data(variant, model))
    bad = []
    for name, decl in prog.data.items():
        if (f := fields.get(name)) is None:
            bad.append(f"{name} (elicit supplies no such data)")
            continue
        want = declared(f.metadata["type"])
        if decl.dims == 0 and f.metadata["scalar"]:
            # a scalar for a one-entry array of the shipped program: there only when used
            if name not in required:
                bad.append(f"{name} as a scalar (the {variant}-tau2 variant of model "
                           f"{model!r} has none)")
        elif decl.dims != want.dims or (decl.type == "int" and want.type == "real"):
            shape = (f"a scalar {decl.type}" if decl.dims == 0
                     else f"{decl.type} with {decl.dims} dimension(s)")
            bad.append(f"{name} as {shape} (elicit supplies {f.metadata['type']})")
    return bad


def check_stan_contract(path: str | Path, variant: str, model: str = PAPER,
                        stanc: Path | None = None) -> StanProgramFile:
    """The program ``path`` as read, if it honours the contract of ``model`` and tau2
    ``variant`` (:func:`~elicit.model.spec.contract_data`, ``contract_params``); else a
    one-line ElicitError: the file does not exist, stanc refuses it, or every missing data and
    parameter name and every data declaration elicit cannot supply."""
    if variant not in ("fixed", "learned"):
        raise ElicitError(f"variant must be 'fixed' or 'learned', got {variant!r}")
    prog = read_program(path, stanc)
    missing_data = [n for n in contract_data(variant, model) if n not in prog.data]
    missing_params = [n for n in contract_params(variant, model) if n not in prog.params]
    parts = [f"{block} {', '.join(names)}" for block, names in (
        ("data block lacks", missing_data), ("parameters block lacks", missing_params),
        ("data block declares", _unsuppliable(prog, variant, model))) if names]
    if not parts:
        return prog
    hint = ""
    if variant == "fixed" and getattr(prog.params.get("tau"), "dims", None) == 0:
        hint = " (tau is a parameter there: is this a learned-tau2 program? use variant 'learned')"
    elif variant == "learned" and getattr(prog.data.get("tau_fixed"), "dims", None) == 0:
        hint = (" (tau_fixed is data there: is this a fixed-tau2 program? use variant "
                "'fixed')")
    elif "tau" in prog.data:
        hint = " (tau^2 of the fixed variant is the data tau_fixed)"
    of = f"the {variant}-tau2 variant" + ("" if model == PAPER else f" of model {model!r}")
    raise ElicitError(f"{prog.path} does not follow the elicit Stan contract of {of}: "
                      f"{'; '.join(parts)}{hint}. See docs/stan.md for the names.")
