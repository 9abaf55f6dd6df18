"""Check that a user's Stan program declares the names of the elicit contract.

The engines pass data by name (``ModelData.to_stan``, the fields of
:class:`~elicit.model.spec.StanData`) and read the MAP by name, so a custom program must
declare every data and parameter name of ``CONTRACT_DATA`` and ``CONTRACT_PARAMS``
(:mod:`elicit.model.spec`), plus the extra data and parameters of the model it is used for
(:func:`~elicit.model.spec.contract_data`, :func:`~elicit.model.spec.contract_params`).
(Extra data names are not caught here: Stan itself refuses to build a program whose data the
engine does not supply.)
"""

from __future__ import annotations

import re
from pathlib import Path

from elicit.errors import ElicitError
from elicit.model.spec import CONTRACT_DATA, contract_data, contract_params
from elicit.model.variants import PAPER

_BLOCK = re.compile(r"\b(functions|transformed\s+data|data|transformed\s+parameters|parameters|"
                    r"model|generated\s+quantities)\s*\{")
_IDENT = re.compile(r"[A-Za-z][A-Za-z0-9_]*")


def _strip_comments(code: str) -> str:
    code = re.sub(r"/\*.*?\*/", " ", code, flags=re.S)
    return re.sub(r"(//|#).*", "", code)


def _blocks(code: str) -> dict[str, str]:
    """Top-level program blocks by normalised name ("data", "transformed data", ...)."""
    out: dict[str, str] = {}
    pos = 0
    while (m := _BLOCK.search(code, pos)) is not None:
        depth, i = 1, m.end()
        while i < len(code) and depth:
            depth += {"{": 1, "}": -1}.get(code[i], 0)
            i += 1
        out[" ".join(m.group(1).split())] = code[m.end():i - 1]
        pos = i
    return out


def _declared(block: str) -> set[str]:
    """Names declared at the top level of a block, old or new array syntax."""
    names = set()
    for stmt in block.split(";"):
        # Drop bounds and sizes, innermost first: "array[N_f] int<lower=0, upper=1> f".
        prev = None
        while prev != stmt:
            prev, stmt = stmt, re.sub(r"\[[^\[\]]*\]|<[^<>]*>|\([^()]*\)", " ", stmt)
        idents = _IDENT.findall(stmt.split("=")[0])
        if len(idents) >= 2:  # type and name
            names.add(idents[-1])
    return names


def _read(path: str | Path) -> tuple[Path, dict[str, str]]:
    path = Path(path)
    if not path.is_file():
        raise ElicitError(f"Stan file {path} does not exist")
    blocks = _blocks(_strip_comments(path.read_text()))
    return path, blocks


def check_stan_contract(path: str | Path, variant: str, model: str = PAPER) -> None:
    """Raise :class:`~elicit.errors.ElicitError` unless ``path`` declares the contract names.

    Parameters
    ----------
    path
        A ``.stan`` file.
    variant
        ``"fixed"`` or ``"learned"``.
    model
        The named model (:mod:`elicit.model.variants`) whose extra data the program must
        also declare (the knobs ``threshold_sd`` and ``coupled`` of the threshold and
        coupling variants; the relevance model's data and its parameter ``zeta``).

    Raises
    ------
    ElicitError
        If the file does not exist, or naming every missing data and parameter name.
    """
    if variant not in CONTRACT_DATA:
        raise ElicitError(f"variant must be 'fixed' or 'learned', got {variant!r}")
    path, blocks = _read(path)
    data = _declared(blocks.get("data", ""))
    params = _declared(blocks.get("parameters", ""))
    missing_data = [n for n in contract_data(variant, model) if n not in data]
    missing_params = [n for n in contract_params(variant, model) if n not in params]
    if not (missing_data or missing_params):
        return
    parts = []
    if missing_data:
        parts.append("data block lacks " + ", ".join(missing_data))
    if missing_params:
        parts.append("parameters block lacks " + ", ".join(missing_params))
    hint = ""
    if variant == "fixed" and "tau" in params:
        hint = " (tau is a parameter there: is this a learned-tau2 program? use variant 'learned')"
    elif variant == "learned" and "tau" in data:
        hint = " (tau is data there: is this a fixed-tau2 program? use variant 'fixed')"
    of = f"the {variant}-tau2 variant" + ("" if model == PAPER else f" of model {model!r}")
    raise ElicitError(f"{path} does not follow the elicit Stan contract of {of}: "
                      f"{'; '.join(parts)}{hint}. See docs/stan.md for the names.")
