// Node's `ws` (Debian's node-ws 8.11), one process, as a peer of `parley-load compare`: /echo
// echoes each message as it came (text or binary), /healthz answers. No compression, as Parley
// and the other peers. Loopback only.
//
//   NODE_PATH=/usr/share/nodejs node LoadTests/peers/node_ws_echo.js PORT
"use strict";
const http = require("http");
const { WebSocketServer } = require("ws");

const port = Number(process.argv[2]);
if (!Number.isInteger(port) || port <= 0 || port > 65535) {
  console.error("usage: node_ws_echo.js PORT");
  process.exit(2);
}
const server = http.createServer((request, response) => {
  response.statusCode = request.url === "/healthz" ? 200 : 404;
  response.end(request.url === "/healthz" ? "ok\n" : "");
});
const sockets = new WebSocketServer({ noServer: true, perMessageDeflate: false, maxPayload: 1 << 20 });
server.on("upgrade", (request, socket, head) => {
  if (request.url !== "/echo") return socket.destroy();
  sockets.handleUpgrade(request, socket, head, (ws) => {
    ws.on("message", (data, isBinary) => ws.send(data, { binary: isBinary }));
  });
});
server.listen(port, "127.0.0.1", () => console.log(`node-ws listening on http://127.0.0.1:${port}/ (pid ${process.pid})`));
