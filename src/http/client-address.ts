// The client's address for connections Fastify does not see as requests (MQTT over WebSocket
// takes over the upgrade): the address a trusted proxy forwarded, by the same rules as request.ip.
import type { IncomingMessage } from 'node:http'
import proxyAddr from '@fastify/proxy-addr'

/** Undefined when no proxy is trusted: the socket's own address is the client's. */
export function forwardedAddress(trustProxy: boolean | string[]): ((req: IncomingMessage) => string) | undefined {
  if (trustProxy === false || (Array.isArray(trustProxy) && !trustProxy.length)) return undefined
  const trust = trustProxy === true ? () => true : proxyAddr.compile(trustProxy)
  return (req) => proxyAddr(req, trust)
}
