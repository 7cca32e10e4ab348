"""A stand-in for GPGPU-Sim used by the campaign tests: reads gpgpusim.config in its run directory and
prints GPGPU-Sim-style statistics. Modes: ok, crash, hang, garbage, flaky (fails its first attempt)."""

import argparse
import pathlib
import re
import sys
import time

ap = argparse.ArgumentParser()
ap.add_argument("--mode", default="ok")
ap.add_argument("--sleep", type=float, default=0.0)
ap.add_argument("--marker", default="")
ap.add_argument("--config", default="gpgpusim.config")
a = ap.parse_args()
run = pathlib.Path.cwd().name  # point-000012-try1
cfg = dict(re.findall(r"^(-\S+)\s+(\S+)", pathlib.Path(a.config).read_text(), re.M))
print("GPGPU-Sim: fake simulator starting", flush=True)
time.sleep(a.sleep)
if a.mode == "crash":
    print("Segmentation fault", flush=True)
    sys.exit(1)
if a.mode == "hang":
    time.sleep(60)
if a.mode == "garbage":
    print("all done, no statistics", flush=True)
    sys.exit(0)
if a.mode == "flaky" and run.endswith("try1"):
    sys.exit(3)
cta, clusters = int(cfg["-gpgpu_shader_cta"]), int(cfg["-gpgpu_n_clusters"])
cycles = 100000 // (cta * clusters) + 17
print(f"kernel_name = fake\ngpu_sim_cycle = {cycles}\ngpu_sim_insn = 5000\ngpu_tot_sim_cycle = {cycles}\n"
      f"gpu_tot_ipc = {5000 / cycles:.4f}")
if a.marker:
    with open(a.marker, "a") as f:
        f.write(run.split("-")[1] + "\n")
