#!/usr/bin/env python3
"""A misbehaving server on a free loopback port, for the tests of remote timeouts and reply
limits. Prints the port on its first line, then answers every connection in MODE:

  redis-trickle  reads a command, then answers a bulk string of SIZE bytes (default 64), one
                 byte a second
  redis-huge     reads a command, then announces a bulk string of SIZE bytes and sends it
  redis-split    the same, the bulk string's "$" in a packet of its own before its length
  redis-array    reads a command, then answers an array of SIZE integers
  http-trickle   reads a request head, then answers 200 with a body of SIZE bytes (default
                 64), 4 bytes a second
  s3-redirect    reads a request head, then answers 301 as S3 does for a bucket in another
                 region (x-amz-bucket-region: eu-west-1), its Location this server again

It prints "request" on a line of its own each time a request has arrived, so that a test can
wait for its client to be inside the call.

  python3 slow_server.py MODE [SIZE]
"""
import socket
import sys
import threading
import time


def trickle(connection, head, body, interval):
    connection.sendall(head)
    for byte in body:
        connection.sendall(bytes([byte]))
        time.sleep(interval)


def send_zeros(connection, size):
    block = b"\0" * (1 << 20)
    sent = 0
    while sent < size:
        chunk = block[: min(len(block), size - sent)]
        connection.sendall(chunk)
        sent += len(chunk)


def serve(connection, mode, size):
    try:
        connection.recv(65536)
        print("request", flush=True)
        length = size or 64
        if mode == "redis-trickle":
            trickle(connection, b"", b"$%d\r\n" % length + b"x" * length + b"\r\n", 1)
        elif mode == "redis-huge":
            connection.sendall(b"$%d\r\n" % size)
            send_zeros(connection, size)
            connection.sendall(b"\r\n")
        elif mode == "redis-split":
            connection.sendall(b"$")
            time.sleep(0.2)
            connection.sendall(b"%d\r\n" % size)
            send_zeros(connection, size)
        elif mode == "redis-array":
            connection.sendall(b"*%d\r\n" % size)
            element = b":0\r\n" * 4096
            for _ in range(0, size, 4096):
                connection.sendall(element)
        elif mode == "s3-redirect":
            body = b"<?xml version='1.0'?><Error><Code>PermanentRedirect</Code><Message>elsewhere</Message></Error>"
            port = connection.getsockname()[1]
            connection.sendall(b"HTTP/1.1 301 Moved Permanently\r\nx-amz-bucket-region: eu-west-1\r\n"
                               b"Location: http://127.0.0.1:%d/moved\r\nContent-Length: %d\r\n\r\n" % (port, len(body)) + body)
        elif mode == "http-trickle":
            trickle(connection, b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % length, b"y" * length, 0.25)
    except OSError:
        pass
    finally:
        connection.close()


def main():
    mode = sys.argv[1]
    size = int(sys.argv[2]) if len(sys.argv) > 2 else 0
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    print(listener.getsockname()[1], flush=True)
    while True:
        connection, _ = listener.accept()
        threading.Thread(target=serve, args=(connection, mode, size), daemon=True).start()


main()
