"""A small JSON API on 127.0.0.1 for tests that need Kubernetes answers a real server (or a
kubemark hollow node) cannot give, such as a pod stuck in ImagePullBackOff. Subclasses
answer GET requests in `answer`; the server, the kubeconfig and the shutdown are here."""
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

import yaml


def not_found(message):
    return 404, {'kind': 'Status', 'apiVersion': 'v1', 'status': 'Failure', 'reason': 'NotFound',
                 'code': 404, 'message': message}


class JsonApi:
    def __init__(self):
        api = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):  # noqa: N802 (http.server naming)
                url = urlparse(self.path)
                code, body = api.answer(url.path.rstrip('/'), parse_qs(url.query), self.headers)
                data = json.dumps(body).encode()
                self.send_response(code)
                self.send_header('Content-Type', 'application/json')
                self.send_header('Content-Length', str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(('127.0.0.1', 0), Handler)
        self.url = 'http://127.0.0.1:%d' % self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def answer(self, path, query, headers):
        """(status code, JSON body) for a GET of `path` with its parsed query."""
        raise NotImplementedError

    def kubeconfig(self, path):
        path.write_text(yaml.safe_dump({
            'apiVersion': 'v1', 'kind': 'Config', 'current-context': 'test',
            'clusters': [{'name': 'test', 'cluster': {'server': self.url}}],
            'users': [{'name': 'test', 'user': {'token': 'test'}}],
            'contexts': [{'name': 'test', 'context': {'cluster': 'test', 'user': 'test'}}]}))
        return path

    def close(self):
        self.server.shutdown()
        self.server.server_close()
