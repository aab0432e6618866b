// Host-side TCP forwarders into isolated machines: the VNC server and websockify listen on the
// machine's own loopback; clients (the console's noVNC, a VNC viewer) connect to the host's address and
// port that connection() announces, and the service pipes each connection to the machine's veth address.
// They live in the service process: after a restart, the next connection() opens them again.

import net from "node:net";

interface Forwarder {
  server: net.Server;
  sockets: Set<net.Socket>;
  spec: string;
}

export class PortForwarders {
  private readonly byKey = new Map<string, Forwarder[]>();

  /** Listens on listenHost:port and forwards to targetHost:targetPort (idempotent for one spec). */
  async ensure(key: string, listenHost: string, port: number, targetHost: string, targetPort: number): Promise<void> {
    const spec = `${listenHost}:${port}>${targetHost}:${targetPort}`;
    const list = this.byKey.get(key) ?? [];
    if (list.some((f) => f.spec === spec && f.server.listening)) return;
    const sockets = new Set<net.Socket>();
    const server = net.createServer((client) => {
      const upstream = net.connect({ host: targetHost, port: targetPort });
      sockets.add(client);
      sockets.add(upstream);
      const end = () => {
        client.destroy();
        upstream.destroy();
        sockets.delete(client);
        sockets.delete(upstream);
      };
      client.on("error", end).on("close", end);
      upstream.on("error", end).on("close", end);
      client.pipe(upstream);
      upstream.pipe(client);
    });
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen({ host: listenHost, port, exclusive: true }, () => {
        server.off("error", reject);
        resolve();
      });
    });
    server.on("error", () => {});
    list.push({ server, sockets, spec });
    this.byKey.set(key, list);
  }

  /** Closes a machine's forwarders and the connections through them. */
  close(key: string): void {
    for (const f of this.byKey.get(key) ?? []) {
      f.server.close();
      for (const s of f.sockets) s.destroy();
    }
    this.byKey.delete(key);
  }

  closeAll(): void {
    for (const key of [...this.byKey.keys()]) this.close(key);
  }
}
