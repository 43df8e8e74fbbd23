"""Kills one process of a dlc-train job in the middle of its training (or, with --stop,
stops it: a hung process) and checks what follows: the job ends, non-zero, within 60 s,
naming the lost process; the checkpoint written before the loss is whole; and the same
job resumed from it finishes the training. Standard library only.

usage: lose_a_process.py [--stop] OUT_FOLDER EPOCHS -- MPIRUN... DLC-TRAIN ARGS...
The command is run as given plus `--epochs EPOCHS --out OUT_FOLDER`, then again with
`--resume OUT_FOLDER/leafnet.safetensors`.
"""
import json
import os
import shutil
import signal
import struct
import subprocess
import sys
import time

BOUND_SECONDS = 60


def fail(message):
    sys.exit("lose_a_process: " + message)


def read_checkpoint(path):
    """The epoch a checkpoint holds, after checking that the file is whole."""
    with open(path, "rb") as f:
        blob = f.read()
    (size,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + size])
    end = max(e["data_offsets"][1] for k, e in header.items() if k != "__metadata__")
    if 8 + size + end != len(blob):
        fail(f"{path} is {len(blob)} bytes, its header describes {8 + size + end}")
    return int(header["__metadata__"]["epoch"])


def descendants(pid):
    children = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    parent = int(f.read().rsplit(")", 1)[1].split()[1])
            except OSError:
                continue
            children.setdefault(parent, []).append(int(entry))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def process_of_rank(launcher, rank):
    for pid in descendants(launcher):
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                environment = f.read().split(b"\0")
        except OSError:
            continue
        if f"OMPI_COMM_WORLD_RANK={rank}".encode() in environment:
            return pid
    return None


def main():
    stop = sys.argv[1] == "--stop"
    out, epochs = sys.argv[1 + stop], sys.argv[2 + stop]
    command = sys.argv[sys.argv.index("--") + 1:] + ["--epochs", epochs, "--out", out]
    checkpoint = os.path.join(out, "leafnet.safetensors")
    shutil.rmtree(out, ignore_errors=True)
    log = open(out + ".first.txt", "w+")
    job = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT,
                           start_new_session=True)
    victim = None
    try:
        # Wait for the first checkpoint: the job is then in its second epoch's work.
        deadline = time.time() + 600
        while not os.path.exists(checkpoint):
            if job.poll() is not None:
                fail(f"the job ended ({job.returncode}) before its first checkpoint")
            if time.time() > deadline:
                fail("no checkpoint after 600 s")
            time.sleep(0.05)
        victim = process_of_rank(job.pid, 1)
        if victim is None:
            fail("found no process of rank 1 under the launcher")
        os.kill(victim, signal.SIGSTOP if stop else signal.SIGKILL)
        killed = time.time()
        print(f"{'stopped' if stop else 'killed'} process {victim} (rank 1)")
        try:
            job.wait(timeout=BOUND_SECONDS)
        except subprocess.TimeoutExpired:
            fail(f"the job still runs {BOUND_SECONDS} s after losing rank 1 (a hang)")
        took = time.time() - killed
    finally:
        if job.poll() is None:
            os.killpg(job.pid, signal.SIGKILL)
        if stop:  # whatever the launcher did, no stopped process is left behind
            for pid in [victim] if victim else []:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
    log.seek(0)
    output = log.read()
    if job.returncode == 0:
        fail("the job exited 0 after losing a process:\n" + output)
    if "rank 1" not in output:
        fail("the job's output does not name rank 1:\n" + output)
    print(f"the job ended with {job.returncode} {took:.1f} s after the loss, naming rank 1")
    epoch = read_checkpoint(checkpoint)
    print(f"the checkpoint is whole and holds epoch {epoch}")

    resumed = subprocess.run(command + ["--resume", checkpoint], stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True, timeout=900)
    if resumed.returncode != 0:
        fail("the resumed job failed:\n" + resumed.stdout)
    sys.stdout.write(resumed.stdout)
    if read_checkpoint(checkpoint) != int(epochs):
        fail(f"after resuming, the checkpoint does not hold epoch {epochs}")


main()
