"""A MAAS region API 2.0 stand-in, just big enough for canonical/maas's maas_instance: allocate, list
interfaces, disconnect, deploy, read, release. It keeps a journal of every call, so that tests can see
what the provider really asked MAAS for, and checks the OAuth PLAINTEXT signature against one API key.

Machines move Ready -> Allocated -> Deploying -> Deployed -> Releasing -> Ready; a deploy or release
is done by the next read, as the provider's waits expect. Runs in a thread of the test process on 127.0.0.1.
"""

from __future__ import annotations

import json
import re
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

API = "/MAAS/api/2.0/"


class FakeMaas:
    def __init__(self, api_key: str, machines: list[dict]):
        """machines: [{hostname, tags, pool, zone, ip, interfaces: [{name, mac}]}], all Ready."""
        self.consumer, self.token, self.secret = api_key.split(":")
        self.machines = {}
        for n, m in enumerate(machines, 1):
            system_id = f"sys{n:03d}"
            interfaces = [{"id": 100 * n + i, "name": nic["name"], "mac_address": nic["mac"],
                           "links": [{"mode": "dhcp"}]} for i, nic in enumerate(m["interfaces"])]
            self.machines[system_id] = {**m, "system_id": system_id, "status": "Ready", "interfaces": interfaces,
                                        "deploy": None}
        self.journal: list[dict] = []
        self.lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/MAAS"

    def __enter__(self) -> FakeMaas:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=10)

    def calls(self, op: str) -> list[dict]:
        return [c for c in self.journal if c["op"] == op]

    def _machine_json(self, m: dict) -> dict:
        return {"system_id": m["system_id"], "hostname": m["hostname"], "fqdn": f"{m['hostname']}.maas",
                "status_name": m["status"], "tag_names": m["tags"], "pool": {"name": m["pool"]},
                "zone": {"name": m["zone"]}, "cpu_count": 8, "memory": 16384,
                "ip_addresses": [m["ip"]] if m["status"] in ("Deploying", "Deployed") else [],
                "resource_uri": f"{API}machines/{m['system_id']}/"}

    def _authorized(self, header: str) -> bool:
        fields = dict(re.findall(r'(\w+)="([^"]*)"', header or ""))
        return (fields.get("oauth_signature_method") == "PLAINTEXT"
                and fields.get("oauth_consumer_key") == self.consumer and fields.get("oauth_token") == self.token
                and urllib.parse.unquote_plus(fields.get("oauth_signature", "")) == "&" + self.secret)

    def _allocate(self, params: dict) -> tuple[int, object]:
        def fits(m: dict) -> bool:
            return (m["status"] == "Ready"
                    and (not params.get("name") or m["hostname"] == params["name"][0])
                    and set(params.get("tags", [])) <= set(m["tags"])
                    and (not params.get("pool") or m["pool"] == params["pool"][0])
                    and (not params.get("zone") or m["zone"] == params["zone"][0]))
        for m in self.machines.values():
            if fits(m):
                m["status"] = "Allocated"
                return 200, self._machine_json(m)
        return 409, "No available machine matches constraints"

    def _handle(self, method: str, path: str, query: dict, params: dict, auth: str) -> tuple[int, object]:
        op = query.get("op", [""])[0]
        with self.lock:
            self.journal.append({"method": method, "path": path, "op": op, "params": params,
                                 "authorized": self._authorized(auth)})
            if not self._authorized(auth):
                return 401, "Unauthorised"
            rest = path[len(API):] if path.startswith(API) else None
            if rest == "machines/" and method == "POST" and op == "allocate":
                return self._allocate(params)
            if rest == "machines/" and method == "POST" and op == "release":
                for system_id in params.get("machines", []):
                    self.machines[system_id]["status"] = "Releasing"
                    self.machines[system_id]["deploy"] = None
                    for nic in self.machines[system_id]["interfaces"]:
                        nic["links"] = [{"mode": "dhcp"}]
                return 200, [self._machine_json(self.machines[s]) for s in params.get("machines", [])]
            if match := re.fullmatch(r"machines/(\w+)/", rest or ""):
                m = self.machines.get(match[1])
                if m is None:
                    return 404, "No machine matches the given query"
                if method == "POST" and op == "deploy":
                    m["status"], m["deploy"] = "Deploying", {k: v[0] for k, v in params.items()}
                    return 200, self._machine_json(m)
                if method == "GET":  # a deploy or release has finished by the time anybody looks
                    m["status"] = {"Deploying": "Deployed", "Releasing": "Ready"}.get(m["status"], m["status"])
                    return 200, self._machine_json(m)
            if match := re.fullmatch(r"nodes/(\w+)/interfaces/", rest or ""):
                return 200, self.machines[match[1]]["interfaces"]
            if match := re.fullmatch(r"nodes/(\w+)/interfaces/(\d+)/", rest or ""):
                nic = next(n for n in self.machines[match[1]]["interfaces"] if n["id"] == int(match[2]))
                if method == "POST" and op == "disconnect":
                    nic["links"] = []
                return 200, nic
            return 404, f"fake MAAS: no {method} {path} op={op}"

    def _handler(self):
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def _serve(self, method: str) -> None:
                url = urllib.parse.urlsplit(self.path)
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length).decode() if length else ""
                code, answer = fake._handle(method, url.path, urllib.parse.parse_qs(url.query),
                                            urllib.parse.parse_qs(body), self.headers.get("Authorization", ""))
                data = (json.dumps(answer) if code == 200 else str(answer)).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json" if code == 200 else "text/plain")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
                self._serve("GET")

            def do_POST(self) -> None:  # noqa: N802
                self._serve("POST")

            def log_message(self, *args) -> None:  # quiet: the journal is the record
                pass

        return Handler
