import http from 'node:http';
import https from 'node:https';
import net, { type LookupFunction } from 'node:net';
import type { Duplex } from 'node:stream';

/**
 * How long an idle connection is kept for the next request, by default. Below the shortest keep-alive
 * common servers announce or apply (Node's and Apache's 5 s), so that this side, not the server,
 * closes an idle connection: a request sent on a connection the server is closing at that moment
 * fails before any answer, and only requests that are safe to repeat are sent again (remote-fetch.ts).
 * Node shortens it further to a `Keep-Alive: timeout=N` the server announces, less a second.
 */
export const IDLE_CONNECTION_MS = 4000;

export interface ConnectionPoolLimits {
  /** Destinations (origin and checked address) with an agent at once; the least recently used goes first. */
  maxDestinations: number;
  /** Connections open at once to one destination; more requests wait for one to be free. */
  maxConnections: number;
  /** Idle connections kept per destination; the rest are closed when their exchange ends. */
  maxIdleConnections: number;
  /** How long an idle connection is kept (IDLE_CONNECTION_MS). */
  idleMs: number;
}

export interface ConnectionCounts {
  destinations: number;
  busy: number;
  idle: number;
}

export const DEFAULT_POOL_LIMITS: ConnectionPoolLimits = {
  maxDestinations: 128,
  maxConnections: 256,
  maxIdleConnections: 32,
  idleMs: IDLE_CONNECTION_MS,
};

/** Hands a connection `address` (checked by the caller) instead of resolving the host name again. */
export function pinnedLookup(address: string): LookupFunction {
  const family = net.isIP(address);
  return ((_hostname: string, options: { all?: boolean }, callback: (...args: unknown[]) => void) => {
    if (options.all) callback(null, [{ address, family }]);
    else callback(null, address, family);
  }) as unknown as LookupFunction;
}

type AgentClass = new (options: https.AgentOptions) => http.Agent;

/**
 * An agent whose every connection goes to one checked address: the lookup is in the agent's own
 * options, which Node lets override a request's, and the address is part of its pooling key too, so
 * no connection made for one address can ever carry a request meant for another. The host name still
 * goes to TLS (SNI and the certificate's check) from the request's URL.
 */
function pinnedAgentClass(Base: AgentClass) {
  return class PinnedAgent extends Base {
    retired = false;

    constructor(
      readonly address: string,
      options: https.AgentOptions,
    ) {
      super({ ...options, lookup: pinnedLookup(address) });
    }

    override getName(options?: http.ClientRequestArgs): string {
      return `${super.getName(options)}>${this.address}`;
    }

    // Node destroys a freed connection instead of keeping it when this answers false.
    override keepSocketAlive(socket: Duplex): boolean {
      return !this.retired && (super.keepSocketAlive(socket) as unknown as boolean);
    }

    /** Keeps no connection from now on: idle ones close at once, busy ones when their exchange ends. */
    retire(): void {
      this.retired = true;
      for (const idle of Object.values(this.freeSockets)) for (const socket of idle ?? []) socket.destroy();
    }
  };
}

const PinnedHttpAgent = pinnedAgentClass(http.Agent);
const PinnedHttpsAgent = pinnedAgentClass(https.Agent);
type PinnedAgent = InstanceType<typeof PinnedHttpAgent>;

/**
 * The kept-alive connections of one outbound client, so that calls to a network's API or a webhook
 * receiver do not each pay a new TCP and TLS handshake. An agent per destination: scheme, host name,
 * port and the address the host name was checked to resolve to. A request reuses a connection only
 * when all four are the same, so the address policy and the pinning hold as they did with a new
 * connection per request: the address was checked for this request (it resolved to it and the policy
 * allowed it), and the connection goes to that address and nowhere else.
 *
 * URLs users give (webhook receivers, media, app pictures) are pooled too: a connection to an
 * address the policy allowed, reused only for the same host name at the same address, reaches
 * nothing a new connection would not. The number of destinations is bounded (the least recently used
 * agent is retired), so many customers' URLs cannot grow it without end.
 */
export class ConnectionPool {
  // A Map iterates in insertion order: re-inserting on use keeps the least recently used first.
  private readonly agents = new Map<string, PinnedAgent>();
  private closed = false;

  constructor(private readonly limits: ConnectionPoolLimits = DEFAULT_POOL_LIMITS) {}

  /** The agent for `url` at the checked `address`; `undefined` once closed (a connection of its own). */
  agentFor(url: URL, address: string): http.Agent | undefined {
    if (this.closed) return undefined;
    const port = url.port || (url.protocol === 'https:' ? '443' : '80');
    const key = `${url.protocol}//${url.hostname}:${port}>${address}`;
    let agent = this.agents.get(key);
    if (agent) {
      this.agents.delete(key);
    } else {
      agent = this.createAgent(url.protocol, address);
      for (const [oldest, old] of this.agents) {
        if (this.agents.size < this.limits.maxDestinations) break;
        old.retire();
        this.agents.delete(oldest);
      }
    }
    this.agents.set(key, agent);
    return agent;
  }

  /** What the pool holds now: destinations with an agent, connections in use and idle ones. */
  counts(): ConnectionCounts {
    const count = (lists: NodeJS.ReadOnlyDict<unknown[]>) =>
      Object.values(lists).reduce((sum, list) => sum + (list?.length ?? 0), 0);
    let busy = 0;
    let idle = 0;
    for (const agent of this.agents.values()) {
      busy += count(agent.sockets);
      idle += count(agent.freeSockets);
    }
    return { destinations: this.agents.size, busy, idle };
  }

  /**
   * Stops keeping connections: idle ones close now, those in use when their exchange ends, and later
   * requests get a connection of their own, so requests still in flight while the service stops finish.
   */
  close(): void {
    this.closed = true;
    for (const agent of this.agents.values()) agent.retire();
    this.agents.clear();
  }

  private createAgent(protocol: string, address: string): PinnedAgent {
    const options: https.AgentOptions = {
      keepAlive: true,
      // For an idle connection in the pool: the request's own idle timeout replaces it while in use.
      timeout: this.limits.idleMs,
      maxSockets: this.limits.maxConnections,
      maxFreeSockets: this.limits.maxIdleConnections,
      // The most recently used connection is the least likely to have been closed by the server.
      scheduling: 'lifo',
    };
    return protocol === 'https:' ? new PinnedHttpsAgent(address, options) : new PinnedHttpAgent(address, options);
  }
}
