"""The README's "tests never download anything", enforced: tests/conftest.py refuses every
connection from a test's process that does not stay on this machine."""

import socket
import urllib.request

import pytest


def test_a_connection_off_this_machine_is_refused():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        # 192.0.2.1 is TEST-NET-1 (RFC 5737): never a real host.
        with pytest.raises(ConnectionRefusedError, match="never download anything"):
            s.connect(("192.0.2.1", 80))


def test_a_download_by_url_is_refused():
    with pytest.raises(Exception, match="never download anything"):
        urllib.request.urlopen("http://192.0.2.1/model.safetensors", timeout=5)


def test_loopback_still_connects():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as client:
            client.connect(server.getsockname())
            connection, _ = server.accept()
            connection.close()
