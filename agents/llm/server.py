"""llama.cpp's OpenAI-compatible server as a managed child process on loopback.

:class:`LocalServer` runs ``python -m llama_cpp.server`` (llama-cpp-python) for one GGUF file on 127.0.0.1 and a
free port, waits until ``GET /v1/models`` lists the model, and stops it (terminate, then kill) when its ``with``
block ends, at interpreter exit and on SIGTERM. Its log goes to ``$CLINICALRAG_HOME/logs/``. If the child dies
during start-up, the error carries the tail of that log.

:func:`shared_server` is the process-wide "start once, reuse" accessor: repeated questions, a chat or a benchmark
in one process talk to the same server; :func:`stop_shared` stops it early.
"""
from __future__ import annotations

import atexit
import importlib.util
import logging
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

from knowledge import paths

log = logging.getLogger(__name__)

HOST = "127.0.0.1"
DEFAULT_CTX = 8192
# the Makefile's install-llm target and the llm-server extra of pyproject.toml install this
LLAMA_CPP_REQUIREMENT = "llama-cpp-python[server]==0.3.36"
# what `python -m llama_cpp.server` imports (llama_cpp plus its [server] extra), checked without importing
SERVER_MODULES = ("llama_cpp", "uvicorn", "fastapi", "sse_starlette", "starlette_context", "pydantic_settings")


class LocalServerError(RuntimeError):
    """The local llama.cpp server cannot be started (not installed, died during start-up, never became ready)."""


def free_port(host: str = HOST) -> int:
    """A TCP port on ``host`` that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def port_open(port: int, host: str = HOST, timeout: float = 1.0) -> bool:
    """Whether something accepts TCP connections on ``host:port``."""
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def default_threads() -> int:
    """All the cores this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def missing_modules(modules: tuple[str, ...] = SERVER_MODULES) -> list[str]:
    return [m for m in modules if importlib.util.find_spec(m) is None]


def check_installed(modules: tuple[str, ...] = SERVER_MODULES) -> None:
    """Raise :class:`LocalServerError` naming the install command when llama.cpp's server is not installed."""
    missing = missing_modules(modules)
    if missing:
        raise LocalServerError(
            f"the local model needs llama.cpp's OpenAI-compatible server (missing: {', '.join(missing)}); install "
            f"it with `make install-llm`, or `{Path(sys.executable).name} -m pip install '{LLAMA_CPP_REQUIREMENT}'`")


# ------------------------------------------------------------------------------------------ stopping on exit
_RUNNING: set["LocalServer"] = set()
_RUNNING_LOCK = threading.RLock()   # re-entrant: the SIGTERM handler may run while this thread holds it
_HOOKS_INSTALLED = False


def _stop_running() -> None:
    with _RUNNING_LOCK:
        servers = list(_RUNNING)
    for srv in servers:
        srv.stop()


def _on_sigterm(previous):
    def handler(signum, frame):
        _stop_running()
        if callable(previous):
            previous(signum, frame)
        elif previous == signal.SIG_IGN:
            return
        else:   # the default action (end the process), but through SystemExit so atexit and finally blocks run
            raise SystemExit(128 + signum)
    return handler


def _install_exit_hooks() -> None:
    global _HOOKS_INSTALLED
    if _HOOKS_INSTALLED:
        return
    atexit.register(_stop_running)
    if threading.current_thread() is threading.main_thread():
        try:
            signal.signal(signal.SIGTERM, _on_sigterm(signal.getsignal(signal.SIGTERM)))
        except (ValueError, OSError):   # not allowed here (embedded interpreter): atexit still applies
            pass
    _HOOKS_INSTALLED = True


def _pdeathsig_hook():
    """Linux: a function for ``preexec_fn`` that has the child get SIGTERM when the thread that started it ends
    (the parent killed, too). Looked up before the fork, so the child only makes one system call."""
    if not sys.platform.startswith("linux") or threading.current_thread() is not threading.main_thread():
        return None
    try:
        import ctypes  # noqa: PLC0415

        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None

    def hook() -> None:   # runs in the child between fork and exec
        prctl(1, signal.SIGTERM)   # PR_SET_PDEATHSIG
    return hook


# ------------------------------------------------------------------------------------------ the server
class LocalServer:
    """``python -m llama_cpp.server`` serving one GGUF on 127.0.0.1 (a free port unless ``port`` is given)."""

    def __init__(self, model_path: Path | str, alias: str | None = None, n_threads: int | None = None,
                 n_ctx: int = DEFAULT_CTX, port: int | None = None, log_dir: Path | str | None = None,
                 extra_args: list[str] | None = None):
        self.model_path = Path(model_path)
        self.alias = alias or self.model_path.stem
        self.n_threads = int(n_threads or default_threads())
        self.n_ctx = int(n_ctx)
        self._fixed_port = port
        self.port = port or free_port()
        self.log_dir = Path(log_dir) if log_dir is not None else paths.home() / "logs"
        self.extra_args = list(extra_args or [])
        self.proc: subprocess.Popen | None = None
        self.startup_s: float | None = None
        self._log = None
        self._lock = threading.RLock()   # re-entrant: SIGTERM during start() stops the child from the same thread

    # -- addresses ------------------------------------------------------------------------------------------
    @property
    def root_url(self) -> str:
        return f"http://{HOST}:{self.port}"

    @property
    def base_url(self) -> str:
        return f"{self.root_url}/v1"

    @property
    def model(self) -> str:
        return self.alias

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None else None

    @property
    def log_path(self) -> Path:
        return self.log_dir / f"llama-server-{self.port}.log"

    def command(self) -> list[str]:
        return [sys.executable, "-m", "llama_cpp.server", "--model", str(self.model_path),
                "--model_alias", self.alias, "--host", HOST, "--port", str(self.port),
                "--n_threads", str(self.n_threads), "--n_threads_batch", str(self.n_threads),
                "--n_ctx", str(self.n_ctx), "--verbose", "False", *self.extra_args]

    # -- lifecycle ------------------------------------------------------------------------------------------
    def start(self, ready_timeout: float = 180.0) -> "LocalServer":
        """Start the child and wait until it serves the model (a port taken meanwhile: another free port)."""
        check_installed()
        if not self.model_path.is_file():
            raise LocalServerError(f"model file not found: {self.model_path}")
        with self._lock:
            if self.alive():
                return self
            t0 = time.perf_counter()
            for attempt in range(3):
                try:
                    self._spawn()
                    self._wait_ready(ready_timeout)
                    break
                except LocalServerError as exc:
                    self._stop_locked()
                    if self._fixed_port or attempt == 2 or "address already in use" not in str(exc).lower():
                        raise
                    self.port = free_port()
            self.startup_s = time.perf_counter() - t0
        log.info("llama.cpp server for %s on %s (pid %s) ready in %.1fs", self.alias, self.base_url, self.pid,
                 self.startup_s)
        return self

    def _spawn(self) -> None:
        _install_exit_hooks()
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self._log = open(self.log_path, "wb")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(self.command(), stdout=self._log, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, preexec_fn=_pdeathsig_hook())
        with _RUNNING_LOCK:
            _RUNNING.add(self)

    def _wait_ready(self, timeout: float) -> None:
        import httpx  # noqa: PLC0415  (installed with openai)

        deadline = time.monotonic() + timeout
        last = "no answer yet"
        while True:
            if self.proc is not None and self.proc.poll() is not None:
                raise LocalServerError(f"the llama.cpp server exited with code {self.proc.returncode} during start-up"
                                       f"\n--- log tail ({self.log_path}) ---\n{self.log_tail()}")
            if time.monotonic() >= deadline:
                break
            try:
                r = httpx.get(f"{self.base_url}/models", timeout=2.0)
                if r.status_code == 200 and any(m.get("id") == self.alias for m in r.json().get("data", [])):
                    return
                last = f"HTTP {r.status_code}"
            except Exception as exc:  # noqa: BLE001 - not up yet
                last = type(exc).__name__
            time.sleep(0.25)
        raise LocalServerError(f"the llama.cpp server was not ready after {timeout:g}s ({last})\n"
                               f"--- log tail ({self.log_path}) ---\n{self.log_tail()}")

    def log_tail(self, n: int = 40) -> str:
        try:
            lines = self.log_path.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            return "<no log>"
        return "\n".join(lines[-n:]) or "<empty log>"

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self, grace: float = 10.0) -> None:
        """Terminate the child (kill it after ``grace`` seconds); safe to call more than once."""
        with self._lock:
            self._stop_locked(grace)

    def _stop_locked(self, grace: float = 10.0) -> None:
        proc = self.proc
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=grace)
        if self._log is not None and not self._log.closed:
            self._log.close()
        with _RUNNING_LOCK:
            _RUNNING.discard(self)

    def __enter__(self) -> "LocalServer":
        return self if self.alive() else self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = f"pid {self.pid}" if self.alive() else "stopped"
        return f"LocalServer({self.alias!r} on {self.base_url}, {state})"


# ------------------------------------------------------------------------------------------ start once, reuse
_SHARED: dict[tuple, LocalServer] = {}
_SHARED_LOCK = threading.Lock()


def shared_server(model_path: Path | str, alias: str | None = None, n_threads: int | None = None,
                  n_ctx: int = DEFAULT_CTX, ready_timeout: float = 180.0) -> LocalServer:
    """The process's server for these settings: started on first use, reused while it runs (restarted if it
    died)."""
    path = Path(model_path).resolve()
    key = (str(path), alias or path.stem, int(n_threads or default_threads()), int(n_ctx))
    with _SHARED_LOCK:
        srv = _SHARED.get(key)
        if srv is not None and srv.alive():
            return srv
        if srv is not None:
            log.warning("the llama.cpp server for %s had stopped (log: %s); starting it again", key[1], srv.log_path)
            srv.stop()
        srv = LocalServer(path, alias=key[1], n_threads=key[2], n_ctx=key[3])
        srv.start(ready_timeout=ready_timeout)
        _SHARED[key] = srv
        return srv


def stop_shared() -> None:
    """Stop every server :func:`shared_server` started."""
    with _SHARED_LOCK:
        servers = list(_SHARED.values())
        _SHARED.clear()
    for srv in servers:
        srv.stop()


__all__ = ["DEFAULT_CTX", "HOST", "LLAMA_CPP_REQUIREMENT", "LocalServer", "LocalServerError", "check_installed",
           "default_threads", "free_port", "missing_modules", "port_open", "shared_server", "stop_shared"]
