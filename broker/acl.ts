// Access control for the standalone broker in Mosquitto's acl_file format, so an ACL written for
// Mosquitto works here unchanged:
//
//   # comment
//   topic [read|write|readwrite|deny] TOPIC     (before any `user` line: anonymous clients)
//   user NAME                                   (the topic lines below are that user's)
//   pattern [read|write|readwrite|deny] TOPIC   (every client; %c = client id, %u = user name)
//
// As in Mosquitto: a matching deny refuses; otherwise access needs a rule that grants it; with no
// rule, nothing is allowed. A subscription is refused when a deny covers everything its filter
// can match, and granted when a grant covers its filter; a granted filter that can also match
// denied topics (`#` beside `topic deny test/nosubscribe`) is checked again message by message on
// delivery (`allows(who, 'read', topic)` from the broker's authorizeForward), as Mosquitto does.
import { readFile } from 'node:fs/promises'

type Access = 'read' | 'write'
type Rule = { topic: string; read: boolean; write: boolean; deny: boolean }
export type Acl = {
  allows(who: { clientId: string; username?: string }, access: Access, topicOrFilter: string): boolean
  rules: number
}

export class AclError extends Error {}

const ACCESS = new Set(['read', 'write', 'readwrite', 'deny'])

function rule(access: string, topic: string): Rule {
  return {
    topic,
    read: access === 'read' || access === 'readwrite',
    write: access === 'write' || access === 'readwrite',
    deny: access === 'deny',
  }
}

export function parseAcl(text: string): Acl {
  const anonymous: Rule[] = []
  const users = new Map<string, Rule[]>()
  const patterns: Rule[] = []
  let current: Rule[] = anonymous
  let count = 0
  text.split(/\r?\n/).forEach((raw, i) => {
    const line = raw.trim()
    if (!line || line.startsWith('#')) return
    const [keyword, ...rest] = line.split(/\s+/)
    const where = `line ${i + 1}`
    if (keyword === 'user') {
      const name = line.slice('user'.length).trim()
      if (!name) throw new AclError(`${where}: user needs a name`)
      current = users.get(name) ?? []
      users.set(name, current)
      return
    }
    if (keyword !== 'topic' && keyword !== 'pattern') throw new AclError(`${where}: unknown keyword ${keyword} (topic, pattern or user)`)
    // The topic is the rest of the line (it may hold spaces); the access word is optional.
    let access = 'readwrite'
    let topic = line.slice(keyword.length).trim()
    const first = rest[0] ?? ''
    if (ACCESS.has(first) && topic.length > first.length) {
      access = first
      topic = topic.slice(first.length).trim()
    }
    if (!topic) throw new AclError(`${where}: ${keyword} needs a topic`)
    if (topic.includes('\u0000')) throw new AclError(`${where}: the topic contains U+0000`)
    ;(keyword === 'pattern' ? patterns : current).push(rule(access, topic))
    count += 1
  })

  return {
    rules: count,
    allows(who, access, topicOrFilter) {
      const own = who.username === undefined ? anonymous : (users.get(who.username) ?? [])
      const expanded = patterns.map((p) => ({ ...p, topic: expand(p.topic, who) })).filter((p) => p.topic !== undefined) as Rule[]
      const rules = [...own, ...expanded]
      // A deny refuses a filter only when it covers all the filter can match; one that covers part
      // of it is applied to each message on delivery. A grant must cover all the filter can match.
      if (rules.some((r) => r.deny && covers(r.topic, topicOrFilter))) return false
      return rules.some((r) => (access === 'read' ? r.read : r.write) && covers(r.topic, topicOrFilter))
    },
  }
}

/** A pattern's %c and %u filled in; a value that would change the topic's shape voids the rule. */
function expand(topic: string, who: { clientId: string; username?: string }): string | undefined {
  if (topic.includes('%u') && (who.username === undefined || /[+#/]/.test(who.username))) return undefined
  if (topic.includes('%c') && /[+#/]/.test(who.clientId)) return undefined
  return topic.replaceAll('%c', who.clientId).replaceAll('%u', who.username ?? '')
}

/**
 * Whether every topic `filter` can match is matched by `acl` (for a plain topic: whether `acl`
 * matches it). `+` in the ACL covers one level (a `+` in the filter too), `#` covers the rest;
 * wildcards at the first level do not reach $-topics (MQTT-4.7.2-1).
 */
export function covers(acl: string, filter: string): boolean {
  const a = acl.split('/')
  const f = filter.split('/')
  if ((a[0] === '+' || a[0] === '#') && f[0]!.startsWith('$')) return false
  for (let i = 0; i < a.length; i++) {
    const level = a[i]!
    if (level === '#') return i === a.length - 1
    if (i >= f.length) return false
    if (level === '+') {
      if (f[i] === '#') return false
      continue
    }
    if (level !== f[i]) return false
  }
  return a.length === f.length
}

export async function loadAcl(path: string): Promise<Acl> {
  let text: string
  try {
    text = await readFile(path, 'utf8')
  } catch (err) {
    throw new AclError(`cannot read the ACL file ${path}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`)
  }
  return parseAcl(text)
}
