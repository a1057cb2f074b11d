"""An HTTP-like request/response exchange over TCP for TRex advanced stateful (ASTF).

TRex plays both ends: clients behind tester port 0, the server behind tester
port 1, so every connection crosses the DUT forward (SYN, request) and back
(response).  Each connection sends one GET-like request of ``request_size``
bytes and receives a response of ``response_size`` bytes, then closes; ``cps``
new connections start per second.  Addresses follow docs/architecture.md: the
clients are 198.18.0.2 (tester port 0), the server 198.19.0.2:80 (tester
port 1), which the DUT reaches through its permanent neighbour entries.

From trex-console (ASTF mode)::

    start -f trex-profiles/astf_http.py -t cps=100,response_size=32768
"""

from __future__ import annotations

CLIENT_ADDRESS = "198.18.0.2"
SERVER_ADDRESS = "198.19.0.2"
SERVER_PORT = 80


def http_messages(request_size: int, response_size: int) -> tuple[bytes, bytes]:
    """A request and a response of exactly the given sizes, headers included."""
    request_head = b"GET /trexlab HTTP/1.1\r\nHost: 198.19.0.2\r\nX-Pad: "
    response_head = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: "
    if request_size < len(request_head) + 4:
        raise ValueError(f"request_size={request_size}: allowed >= {len(request_head) + 4} bytes")
    request = request_head + b"x" * (request_size - len(request_head) - 4) + b"\r\n\r\n"
    # The body length depends on how many digits Content-Length has: try lengths until it fits.
    for digits in range(1, 10):
        body = response_size - len(response_head) - digits - 4
        if body >= 0 and len(str(body)) == digits:
            response = response_head + str(body).encode() + b"\r\n\r\n" + b"y" * body
            return request, response
    raise ValueError(f"response_size={response_size}: allowed >= {len(response_head) + 5} bytes")


class HTTPLike:
    def get_profile(self, tunables=(), cps=100.0, request_size=100, response_size=1000, **kwargs):
        from trex.astf.api import (  # imported here so the messages can be built without TRex
            ASTFAssociationRule,
            ASTFIPGen,
            ASTFIPGenDist,
            ASTFIPGenGlobal,
            ASTFProfile,
            ASTFProgram,
            ASTFTCPClientTemplate,
            ASTFTCPServerTemplate,
            ASTFTemplate,
        )

        options = {"cps": cps, "request_size": request_size, "response_size": response_size}
        items = list(tunables or ())
        options.update({str(items[i]).lstrip("-"): items[i + 1] for i in range(0, len(items) - 1, 2)})
        cps = float(options["cps"])
        if not cps > 0:
            raise ValueError(f"cps={cps}: allowed > 0 connections/s")
        request, response = http_messages(int(options["request_size"]), int(options["response_size"]))

        client = ASTFProgram()
        client.send(request)
        client.recv(len(response))
        server = ASTFProgram()
        server.recv(len(request))
        server.send(response)

        addresses = ASTFIPGen(glob=ASTFIPGenGlobal(ip_offset="0.0.0.0"),
                              dist_client=ASTFIPGenDist(ip_range=[CLIENT_ADDRESS, CLIENT_ADDRESS], distribution="seq"),
                              dist_server=ASTFIPGenDist(ip_range=[SERVER_ADDRESS, SERVER_ADDRESS], distribution="seq"))
        template = ASTFTemplate(
            client_template=ASTFTCPClientTemplate(program=client, ip_gen=addresses, cps=cps, port=SERVER_PORT),
            server_template=ASTFTCPServerTemplate(program=server, assoc=ASTFAssociationRule(port=SERVER_PORT)),
        )
        return ASTFProfile(default_ip_gen=addresses, templates=template)


def register():
    return HTTPLike()
