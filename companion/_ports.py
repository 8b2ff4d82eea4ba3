"""A free TCP port on this machine, for lesson 12's launchers and the course's own servers (the walkthrough's Lab,
the class hub). Standard library only: the hub imports it without importing torch."""

import socket


def free_port() -> int:
    """A TCP port on 127.0.0.1 that is free right now (the system picks it; a rare race remains until it is used)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]
