// Keyset paging shared by every list that pages newest first: the cursor is the last row's
// (createdAt, id), so a page never skips or repeats rows inserted meanwhile.
import { and, eq, lt, or, type SQL } from 'drizzle-orm'
import type { PgColumn } from 'drizzle-orm/pg-core'

export type Cursor = { createdAt: Date; id: string }

function encodeCursor(c: Cursor): string {
  return Buffer.from(`${c.createdAt.toISOString()}|${c.id}`).toString('base64url')
}

/**
 * Cursors carry milliseconds, and the paginated tables store created_at at millisecond precision
 * (timestamptz(3)), so a page boundary never falls between rows of the same millisecond.
 */
export function decodeCursor(s: string): Cursor | null {
  const [at, id] = Buffer.from(s, 'base64url').toString('utf8').split('|')
  // Only what encodeCursor writes: an ISO time in years 0001–9999 (JavaScript accepts more than PostgreSQL).
  if (!at || !/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/.test(at)) return null
  const createdAt = new Date(at)
  if (!id || Number.isNaN(createdAt.getTime())) return null
  return { createdAt, id }
}

/** The rows after `cursor` in newest-first order (order by createdAt desc, id desc); undefined for the first page. */
export function olderThan(createdAt: PgColumn, id: PgColumn, cursor: Cursor | undefined): SQL | undefined {
  return cursor ? or(lt(createdAt, cursor.createdAt), and(eq(createdAt, cursor.createdAt), lt(id, cursor.id))) : undefined
}

/** Rows fetched with limit + 1: the page, and the cursor of its last row when more follow. */
export function pageOf<T extends Cursor>(rows: T[], limit: number): { page: T[]; nextCursor: string | null } {
  const page = rows.slice(0, limit)
  const last = page[page.length - 1]
  return { page, nextCursor: rows.length > limit && last ? encodeCursor(last) : null }
}
