"""Inside the sealed sandbox: relay loopback TCP ports to the harness's unix sockets, then run the agent.

    python -I -S seal_forward.py [--drop UID:GID] [--listen PORT=SOCKET]... -- COMMAND...

Runs as the sandbox's first process, with the standard library only (started with `-I -S`: nothing of
the agent's environment is imported). The sandbox's network namespace has only its own loopback, so
the agent's `http://127.0.0.1:<port>/...` reaches a listener here, whose every connection is relayed
byte for byte to SOCKET, a unix socket the harness serves from outside and relays on to its own
127.0.0.1 endpoint. `--drop` (when the harness runs as root) sets this process's uid and gid to an
unprivileged pair after the listeners are bound, before the agent starts: the agent never holds uid 0.
The agent's exit status is this process's (128 + N when a signal N ended it); the sandbox, and with it
every process the agent left, ends when this process does.

Not imported by the harness; `sealed.py` names this file.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import sys
import threading

CHUNK = 65536


def _pipe(src: socket.socket, dst: socket.socket) -> None:
    try:
        while data := src.recv(CHUNK):
            dst.sendall(data)
    except OSError:
        pass
    finally:
        for s, how in ((dst, socket.SHUT_WR), (src, socket.SHUT_RD)):
            with contextlib.suppress(OSError):
                s.shutdown(how)


def _relay(client: socket.socket, path: str) -> None:
    upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        upstream.connect(path)
    except OSError:
        client.close()
        upstream.close()
        return
    back = threading.Thread(target=_pipe, args=(upstream, client), daemon=True)
    back.start()
    _pipe(client, upstream)
    back.join()
    client.close()
    upstream.close()


def _serve(listener: socket.socket, path: str) -> None:
    while True:
        try:
            client, _ = listener.accept()
        except OSError:
            return
        # Relayed writes come in pieces (headers, then the body): without this, Nagle's algorithm holds a
        # piece back until the agent's delayed ACK, tens of milliseconds per response.
        client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        threading.Thread(target=_relay, args=(client, path), daemon=True).start()


def main(argv: list[str]) -> int:
    split = argv.index("--")
    options, command = argv[:split], argv[split + 1 :]
    listens: list[tuple[int, str]] = []
    drop: tuple[int, int] | None = None
    i = 0
    while i < len(options):
        if options[i] == "--listen":
            port_text, socket_path = options[i + 1].split("=", 1)
            listens.append((int(port_text), socket_path))
        elif options[i] == "--drop":
            uid, gid = options[i + 1].split(":")
            drop = (int(uid), int(gid))
        i += 2
    for port, path in listens:
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", port))
        listener.listen(64)
        threading.Thread(target=_serve, args=(listener, path), daemon=True).start()
    if drop is not None:
        os.setgroups([])
        os.setgid(drop[1])
        os.setuid(drop[0])  # irrevocable: every uid of this process is now the unprivileged one
    try:
        pid = os.fork()
    except OSError as exc:
        sys.stderr.write(f"agentrel sandbox: cannot start the agent: {exc.strerror}\n")
        return 127
    if pid == 0:
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
        try:
            os.execvp(command[0], command)
        except OSError as exc:
            sys.stderr.write(f"agentrel sandbox: {command[0]}: {exc.strerror}\n")
        os._exit(127)
    signal.signal(signal.SIGTERM, lambda *_: os.kill(pid, signal.SIGTERM))
    while True:
        try:
            _, status = os.waitpid(pid, 0)
            break
        except InterruptedError:
            continue
    if os.WIFSIGNALED(status):
        return 128 + os.WTERMSIG(status)
    return os.WEXITSTATUS(status)


if __name__ == "__main__":
    sys.stdout.flush()
    os._exit(main(sys.argv[1:]))
