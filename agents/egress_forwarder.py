"""Inside the sandbox, the one way out of a setup command (docs/coding-loops.md, "The project's
own toolchain"): listen on the sandbox's own loopback, relay every connection to the worker's
setup proxy through the Unix socket bound in, then exec the command.

    python -I -S egress_forwarder.py SOCKET PORT PROGRAM [ARG...]

The sandbox has a network namespace of its own with nothing but a loopback, so pip, npm and go,
told HTTP(S)_PROXY=http://127.0.0.1:PORT, reach the proxy and nothing else; the proxy decides
which hosts they may fetch from. The listener is ready before the command starts (no race);
the relaying child dies with the sandbox's PID namespace when the command ends.

Copied into the proxy's private folder and run by the sandbox's Python: the standard library
only, no import of this project.
"""

import os
import socket
import sys
import threading

CHUNK = 64 * 1024


def main(argv: list[str]) -> None:
    path, port, command = argv[1], int(argv[2]), argv[3:]
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", port))
    listener.listen(64)
    if os.fork() == 0:  # before any thread: the child relays, the parent becomes the command
        _quiet()
        _serve(listener, path)
        os._exit(0)
    listener.close()
    os.execvp(command[0], command)


def _quiet() -> None:
    """The relay holds none of the command's output pipes (their end is the command's end)."""
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)


def _serve(listener: socket.socket, path: str) -> None:
    while True:
        client, _address = listener.accept()
        threading.Thread(target=_relay, args=(client, path), daemon=True).start()


def _relay(client: socket.socket, path: str) -> None:
    upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        upstream.connect(path)
    except OSError:
        client.close()
        upstream.close()
        return
    back = threading.Thread(target=_pump, args=(upstream, client), daemon=True)
    back.start()
    _pump(client, upstream)
    back.join()
    client.close()
    upstream.close()


def _pump(source: socket.socket, sink: socket.socket) -> None:
    try:
        while data := source.recv(CHUNK):
            sink.sendall(data)
        sink.shutdown(socket.SHUT_WR)
    except OSError:
        for sock in (source, sink):
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


if __name__ == "__main__":
    main(sys.argv)
