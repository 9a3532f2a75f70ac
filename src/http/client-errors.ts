// Requests Node's HTTP parser refuses before Fastify sees them (headers over the limit, malformed
// request lines, a request that took too long) still get the service's error body.
import { STATUS_CODES } from 'node:http'
import type { Socket } from 'node:net'

const answers: Record<string, [status: number, code: string, message: string]> = {
  HPE_HEADER_OVERFLOW: [431, 'HEADERS_TOO_LARGE', 'The request headers are larger than this service accepts'],
  ERR_HTTP_REQUEST_TIMEOUT: [408, 'REQUEST_TIMEOUT', 'The request took too long to arrive'],
}

export function clientErrorHandler(err: NodeJS.ErrnoException, socket: Socket): void {
  if (err.code === 'ECONNRESET' || socket.destroyed || !socket.writable) return
  const [status, code, message] = answers[err.code ?? ''] ?? [400, 'BAD_REQUEST', 'Malformed HTTP request']
  const body = JSON.stringify({ message, code })
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\ncontent-type: application/json; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
  )
}
