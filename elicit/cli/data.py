"""The ``elicit data`` command: ``elicit data fetch`` fills the data directory."""

from __future__ import annotations

import argparse
from collections import Counter
from collections.abc import Collection
from pathlib import Path

from elicit.cli.argtypes import add_command


def add_data_parsers(subparsers, commands: Collection[str] | None = None) -> None:
    """Register ``elicit data`` and its sub-command ``fetch``."""
    add_command(subparsers, "data", commands, _data_options,
                help="manage the data directory (download the data)")


def _data_options(p: argparse.ArgumentParser) -> None:
    from elicit.data.fetch import FILE_GROUPS, MIRROR_ENV, UPSTREAM_ENV
    from elicit.data.files import DATA_ENV

    sub = p.add_subparsers(dest="data_command", required=True, metavar="{fetch}")
    f = sub.add_parser(
        "fetch", help="download the paper's matrices, the raw-text reviews and the stop list",
        description="Download the data files into the data directory and verify their SHA-256 "
                    "sums. Without --mirror the original public sources are downloaded from "
                    "GitHub and converted; files already present and verified are skipped.")
    f.add_argument("--data-dir", type=Path, default=None,
                   help=f"the data directory to fill (default: ${DATA_ENV}, else <repo>/data)")
    # the names are checked by fetch, before anything is downloaded
    f.add_argument("--files", default=None, metavar="NAME,...",
                   help="comma-separated file names or groups (" + ", ".join(FILE_GROUPS)
                        + "); default all")
    f.add_argument("--mirror", default=None, metavar="URL",
                   help="base URL or folder of a copy of a data directory, holding the finished "
                        f"files as URL/<file name> (default: ${MIRROR_ENV})")
    f.add_argument("--upstream", default=None, metavar="URL",
                   help="base URL or folder replacing https://raw.githubusercontent.com for the "
                        f"original sources (default: ${UPSTREAM_ENV})")
    f.add_argument("--force", action="store_true",
                   help="download again even if a file is present and verified, and replace a "
                        "present file that does not verify")
    f.add_argument("--quiet", action="store_true", help="print nothing but errors")


def cmd_data_fetch(args: argparse.Namespace) -> None:
    from elicit.data.fetch import fetch, fetch_dir

    data_dir = fetch_dir(args.data_dir)
    results = fetch(data_dir, files=args.files, mirror=args.mirror, force=args.force,
                    progress=not args.quiet, upstream=args.upstream)
    if not args.quiet:
        counts = Counter(r.status for r in results)
        print(f"data directory {data_dir}: {', '.join(f'{v} {k}' for k, v in counts.items())}")


#: ``elicit data``'s entry of ``elicit.cli.main``'s command table (fetch: its one sub-command).
DATA_COMMANDS = {"data": cmd_data_fetch}
