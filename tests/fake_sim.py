"""A stand-in for GPGPU-Sim used by the campaign tests: reads gpgpusim.config in its run directory and
prints GPGPU-Sim-style statistics. Modes: ok, crash, hang, garbage, flaky (fails its first attempt),
flood (prints --flood-mb MiB of chatter before its statistics), spawn (leaves a sleeping grandchild in
its process group, like a wrapper script); --crash-cta N crashes at that -gpgpu_shader_cta alone (one
failing design). --started FILE gets "<point> <run dir> <pid>" when it starts (every execution,
finished or not); --marker FILE gets "<point>" when it finishes."""

import argparse
import os
import pathlib
import re
import subprocess
import sys
import time

ap = argparse.ArgumentParser()
ap.add_argument("--mode", default="ok", help="a mode, or @FILE holding it")
ap.add_argument("--sleep", default="0", help="seconds, or @FILE holding them")
ap.add_argument("--marker", default="")
ap.add_argument("--started", default="")
ap.add_argument("--flood-mb", type=int, default=0)
ap.add_argument("--config", default="gpgpusim.config")
ap.add_argument("--crash-cta", type=int, default=None, help="crash (exit 1) at this -gpgpu_shader_cta")
a = ap.parse_args()
if a.mode.startswith("@"):
    a.mode = pathlib.Path(a.mode[1:]).read_text().strip()
run = pathlib.Path.cwd().name  # point-000012-try1
if a.started:
    with open(a.started, "a") as f:
        f.write(f"{int(run.split('-')[1])} {pathlib.Path.cwd()} {os.getpid()}\n")
cfg = dict(re.findall(r"^(-\S+)\s+(\S+)", pathlib.Path(a.config).read_text(), re.M))
print("GPGPU-Sim: fake simulator starting", flush=True)
if a.mode == "spawn":
    subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
if a.mode == "flood":
    line = b"gpgpu-sim chatter " + b"x" * 1004 + b"\n"  # 1 KiB
    block = line * 1024
    out = sys.stdout.buffer
    for _ in range(a.flood_mb):
        out.write(block)
    out.flush()
time.sleep(float(pathlib.Path(a.sleep[1:]).read_text()) if a.sleep.startswith("@") else float(a.sleep))
if a.mode == "crash" or (a.crash_cta is not None and int(cfg["-gpgpu_shader_cta"]) == a.crash_cta):
    print("Segmentation fault", flush=True)
    sys.exit(1)
if a.mode == "hang":
    time.sleep(60)
if a.mode == "garbage":
    print("all done, no statistics", flush=True)
    sys.exit(0)
if a.mode == "flaky" and re.search(r"-try1(\.\d+)?$", run):
    sys.exit(3)
cta, clusters = int(cfg["-gpgpu_shader_cta"]), int(cfg["-gpgpu_n_clusters"])
cycles = 100000 // (cta * clusters) + 17
print(f"kernel_name = fake\ngpu_sim_cycle = {cycles}\ngpu_sim_insn = 5000\ngpu_tot_sim_cycle = {cycles}\n"
      f"gpu_tot_sim_insn = 5000\ngpu_tot_ipc = {5000 / cycles:.4f}", flush=True)
if a.marker:
    with open(a.marker, "a") as f:
        f.write(run.split("-")[1] + "\n")
