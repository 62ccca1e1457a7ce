#!/usr/bin/env python3
"""scripts/performance-report on benchmark JSON made here, whose figures are known: the medians
it takes, the ratios of ipu to its reference, and their ranges over the repetitions (ipu's
slowest over the reference's fastest, and ipu's fastest over its slowest); a file with only the
aggregates gives no range.

    performance_report.py <repository root>
"""

import json
import os
import subprocess
import sys
import tempfile


def runs(name, values, counter, extra=None, family=0):
    """Google Benchmark's JSON rows of `name`: one per repetition, `counter` taking `values`,
    then their median, as --benchmark_repetitions writes them."""
    base = {"run_name": name + "/real_time", "family_index": family, "per_family_instance_index": 0,
            "repetitions": len(values), "threads": 1, "time_unit": "ms"}
    rows = [dict(base, name=base["run_name"], run_type="iteration", repetition_index=i, real_time=1000.0 / v,
                 **{counter: v}, **(extra or {})) for i, v in enumerate(values)]
    median = sorted(values)[len(values) // 2]
    rows.append(dict(base, name=base["run_name"] + "_median", run_type="aggregate", aggregate_name="median",
                     real_time=1000.0 / median, **{counter: median}, **(extra or {})))
    return rows


def write(directory, name, rows):
    path = os.path.join(directory, name)
    with open(path, "w", encoding="utf-8") as f:
        json.dump({"context": {"ipu_threads": 2}, "benchmarks": rows}, f)
    return path


def report(root, *args):
    out = subprocess.run([sys.executable, os.path.join(root, "scripts", "performance-report"), "--no-svg",
                          "--results", os.path.join(tempfile.gettempdir(), "no-such-results"), *args],
                         capture_output=True, text=True, check=True)
    return out.stdout


def row_of(text, first_cell):
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if cells and cells[0] == first_cell:
            return cells
    raise AssertionError("no row %r in:\n%s" % (first_cell, text))


def main():
    root = sys.argv[1]
    failures = []

    def check(what, got, expected):
        if got != expected:
            failures.append("%s: %r, expected %r" % (what, got, expected))

    with tempfile.TemporaryDirectory() as d:
        shape = "conv/mobilenet_v2/112x112x16->96 k1 s1 g1"
        flop = {"flop": 1.54e8, "layers": 1}
        conv = write(d, "conv.json", runs(shape + "/ipu", [150.0, 100.0, 120.0], "GFLOP/s", flop, 0)
                     + runs(shape + "/onednn", [200.0, 250.0, 300.0], "GFLOP/s", flop, 1))
        # Medians 120 and 250: 0.48; slowest over fastest 100 / 300, fastest over slowest 150 / 200.
        cells = row_of(report(root, "--conv", conv), "112x112x16→96 k1 s1 g1")
        check("conv GFLOP/s", cells[3:5], ["120", "250"])
        check("conv ratio", cells[5], "0.48 (0.33–0.75)")

        network = write(d, "network.json", runs("network/mobilenet_v2/ipu_f32", [40.0, 52.0, 45.0], "images/s", None, 0)
                        + runs("network/mobilenet_v2/onednn", [50.0, 40.0, 60.0], "images/s", None, 1))
        text = report(root, "--network", network)
        ipu = [line for line in text.splitlines() if "ipu engine, f32" in line]
        dnn = [line for line in text.splitlines() if "oneDNN, f32" in line]
        check("network ipu row", [c.strip() for c in ipu[0].strip("|").split("|")][-1] if ipu else None, "0.90 (0.67–1.3)")
        check("network oneDNN row", [c.strip() for c in dnn[0].strip("|").split("|")][-1] if dnn else None, "1.0")

        training = write(d, "training.json",
                         runs("resnet50/f32/batch8", [5.0, 4.0, 6.0], "images_per_second", {"host_threads": 2}, 0)
                         + runs("resnet50/f32/batch8/libtorch", [4.0, 5.0, 5.0], "images_per_second",
                                {"host_threads": 2, "loss_agreement": 5e-7}, 1))
        cells = row_of(report(root, "--training", training), "resnet50")
        check("training ratio", cells[3], "1.0 (0.80–1.5)")

        # Only the aggregates (--benchmark_report_aggregates_only): the medians, no range.
        only_medians = [row for row in json.load(open(conv, encoding="utf-8"))["benchmarks"] if row["run_type"] == "aggregate"]
        cells = row_of(report(root, "--conv", write(d, "medians.json", only_medians)), "112x112x16→96 k1 s1 g1")
        check("ratio of aggregates only", cells[5], "0.48")

    for f in failures:
        print("performance_report: " + f, file=sys.stderr)
    print("performance_report: %d checks failed" % len(failures) if failures else "performance_report: all checks passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
