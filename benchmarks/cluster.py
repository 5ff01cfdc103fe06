"""A standalone Spark cluster on this machine, started from pyspark's own launcher: a master and workers,
each worker in a mount namespace of its own whose /tmp is private (nothing it runs sees the driver's
temporary files, as on other machines). For `python -m benchmarks.run --master spark://...` and the
cluster tests.

    python -m benchmarks.cluster [--workers 2] [--cores 1] [--memory 2g] DIRECTORY

prints the master's URL and runs until interrupted; a driver sets DRIVER_CONF (`python -m benchmarks.run
--scale --master URL --conf spark.shuffle.readHostLocalDisk=false`). DIRECTORY (outside
/tmp) holds the logs and the workers' own files; what every process must see (a warehouse) belongs
outside /tmp too, as on an NFS mount. A private /tmp needs `unshare` and the right to make mount
namespaces (root, or user namespaces).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

START_SECONDS = 120  # for a daemon to listen
# what a driver of this cluster sets: its executors share a host but not their /tmp, so each fetches
# another's shuffle blocks from it rather than reading them from that executor's directory
DRIVER_CONF = {"spark.shuffle.readHostLocalDisk": "false"}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_for_port(port: int, log: Path) -> None:
    """Wait until something listens on `port` (else fail with the end of `log`)."""
    deadline = time.monotonic() + START_SECONDS
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            if time.monotonic() > deadline:
                raise TimeoutError(log.read_text()[-3000:] if log.exists() else "no log") from None
            time.sleep(0.5)


def spark_home() -> Path:
    from pyspark.find_spark_home import _find_spark_home

    return Path(_find_spark_home())


def private_tmp(command: list[str]) -> list[str]:
    """`command` run in a mount namespace of its own, over a fresh, empty /tmp."""
    if shutil.which("unshare") is None:
        raise RuntimeError("a worker with a private /tmp needs `unshare` (util-linux)")
    return ["unshare", "--mount", "sh", "-c", 'mount -t tmpfs tmpfs /tmp && exec "$@"', "worker", *command]


@contextlib.contextmanager
def standalone_cluster(directory: Path, workers: int = 2, cores: int = 1, memory: str = "768m") -> Iterator[str]:
    """A master and `workers` workers of `cores` cores and `memory` each, each worker with a private
    /tmp, logging to `directory / "cluster.log"`: the master's URL while they run."""
    if Path(directory).resolve().is_relative_to("/tmp"):
        raise ValueError(f"{directory} is under /tmp, which the workers do not see")
    spark_class = str(spark_home() / "bin" / "spark-class")
    port = free_port()
    url = f"spark://127.0.0.1:{port}"
    environment = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_LOG_DIR": str(directory)}
    log_path = Path(directory) / "cluster.log"
    log = open(log_path, "w")  # noqa: SIM115 - the processes write it until they stop
    master = [spark_class, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(port)]
    processes = [subprocess.Popen([*master, "--webui-port", str(free_port())], env=environment, stdout=log, stderr=log)]
    try:
        wait_for_port(port, log_path)
        for n in range(workers):
            worker = [
                spark_class,
                "org.apache.spark.deploy.worker.Worker",
                url,
                *("--host", "127.0.0.1", "--cores", str(cores), "--memory", memory),
                *("--webui-port", str(free_port()), "--work-dir", str(Path(directory) / f"worker{n}")),
            ]
            processes.append(subprocess.Popen(private_tmp(worker), env=environment, stdout=log, stderr=log))
        yield url
    finally:
        for process in reversed(processes):
            process.terminate()
        for process in processes:
            process.wait(timeout=60)
        log.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("directory", type=Path)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--cores", type=int, default=1)
    parser.add_argument("--memory", default="2g")
    args = parser.parse_args()
    args.directory.mkdir(parents=True, exist_ok=True)
    with standalone_cluster(args.directory, args.workers, args.cores, args.memory) as url:
        print(url, flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            while True:
                time.sleep(3600)


if __name__ == "__main__":
    main()
