"""Start-up benchmark: seconds until HTTP 200 for `python app.py` against a bare gr.Blocks app.

Runs both alternately in one run (so machine noise hits both alike), N rounds each, and
prints a table of medians plus the ratio app/bare (target: at most 1.3). Also reports the
resident memory of each process once it answers. Writes bench/results/startup.json.

    python bench/startup.py [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
BARE_APP = """
import gradio as gr
with gr.Blocks() as demo:
    gr.Textbox()
demo.launch(server_name="127.0.0.1", server_port={port}, prevent_thread_lock=False)
"""


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def _measure(command: list[str], url: str, env: dict[str, str]) -> tuple[float, float]:
    started = time.perf_counter()
    process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    try:
        while time.perf_counter() - started < 120:
            if process.poll() is not None:
                raise RuntimeError(f"{command} exited with {process.returncode}")
            try:
                if httpx.get(url, timeout=1).status_code == 200:
                    return time.perf_counter() - started, _rss_mb(process.pid)
            except httpx.HTTPError:
                pass
            time.sleep(0.05)
        raise RuntimeError(f"{command} did not answer within 120 s")
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    base_env = {**os.environ, "GRADIO_ANALYTICS_ENABLED": "False",
                "HF_HUB_DISABLE_TELEMETRY": "1", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    samples: dict[str, list[tuple[float, float]]] = {"app.py": [], "bare gr.Blocks": []}
    with tempfile.TemporaryDirectory() as tmp:
        bare_script = Path(tmp) / "bare.py"
        for round_no in range(args.rounds):
            port = _free_port()
            env = {**base_env, "GRADIO_SERVER_PORT": str(port),
                   "DATABASE_URL": f"sqlite:///{tmp}/bench-{round_no}.db",
                   "DATA_DIR": f"{tmp}/data"}
            samples["app.py"].append(_measure([sys.executable, "app.py"],
                                              f"http://127.0.0.1:{port}/agent/", env))
            port = _free_port()
            bare_script.write_text(BARE_APP.replace("{port}", str(port)))
            samples["bare gr.Blocks"].append(_measure([sys.executable, str(bare_script)],
                                                      f"http://127.0.0.1:{port}/", base_env))
    rows = {name: {"median_s": statistics.median(s for s, _ in values),
                   "rss_mb": statistics.median(m for _, m in values),
                   "samples_s": [round(s, 3) for s, _ in values]}
            for name, values in samples.items()}
    ratio = rows["app.py"]["median_s"] / rows["bare gr.Blocks"]["median_s"]
    print(f"{'server':<16} {'median s to 200':>16} {'RSS MB':>8}  samples")
    for name, row in rows.items():
        print(f"{name:<16} {row['median_s']:>16.2f} {row['rss_mb']:>8.0f}  {row['samples_s']}")
    print(f"ratio app/bare: {ratio:.2f} (target <= 1.3) -> {'OK' if ratio <= 1.3 else 'OVER'}")
    out = ROOT / "bench" / "results"
    out.mkdir(parents=True, exist_ok=True)
    (out / "startup.json").write_text(json.dumps({"rounds": args.rounds, "results": rows,
                                                  "ratio": ratio}, indent=2))


if __name__ == "__main__":
    main()
