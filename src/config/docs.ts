// docs/configuration.md's reference tables, written from the declarations (npm run docs:config;
// test/docs/configuration.test.ts fails when the committed file differs). The hand-written text
// above the marker line is kept as it is.
import { z } from 'zod'
import { sections } from './sections.js'
import { type Variable, variablesOf } from './variables.js'

export const generatedMarker =
  '<!-- Generated below from src/config/*.ts by `npm run docs:config`: edit the declarations there, not this text. -->'

type JsonSchema = {
  type?: string
  enum?: unknown[]
  minimum?: number
  exclusiveMinimum?: number
  maximum?: number
  format?: string
  minLength?: number
  maxLength?: number
  pattern?: string
  default?: unknown
}

const grouped = (n: number) => String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ',')

/** zod's int() bounds every integer to the safe range: no bound a reader needs to be told of. */
const bound = (n: number | undefined) => (n === undefined || Math.abs(n) >= Number.MAX_SAFE_INTEGER ? undefined : n)

function range(schema: JsonSchema): string {
  const kind = schema.type === 'integer' ? 'integer' : 'number'
  const min =
    bound(schema.minimum) ??
    (schema.exclusiveMinimum !== undefined && kind === 'integer' ? bound(Math.floor(schema.exclusiveMinimum) + 1) : undefined)
  const max = bound(schema.maximum)
  if (schema.exclusiveMinimum !== undefined && kind === 'number' && min === undefined)
    return `${kind} > ${grouped(schema.exclusiveMinimum)}`
  if (min !== undefined && max !== undefined) return `${kind} ${grouped(min)}–${grouped(max)}`
  if (min !== undefined) return `${kind} ≥ ${grouped(min)}`
  return max !== undefined ? `${kind} ≤ ${grouped(max)}` : kind
}

/** What a variable accepts, as its schema says (the input side: what may be written in the environment). */
function accepted(v: Variable, schema: JsonSchema): string {
  if (v.shown.values) return v.shown.values
  if (schema.enum) return schema.enum.map((e) => `\`${e}\``).join(', ')
  if (schema.type === 'integer' || schema.type === 'number') return range(schema)
  if (schema.format === 'uri') return 'URL'
  if (schema.format === 'email') return 'e-mail address'
  // A pattern says too little to a reader: its declaration has to say it in words.
  if (schema.pattern) throw new Error(`${v.name}: a pattern-checked variable needs shown.values`)
  if (schema.maxLength !== undefined) return `text, ${schema.minLength ?? 0}–${schema.maxLength} characters`
  if (schema.minLength === 1) return 'text, not empty'
  if (schema.minLength) return `text, at least ${schema.minLength} characters`
  return 'text'
}

function row(v: Variable): string[] {
  const schema = z.toJSONSchema(v.schema, { io: 'input', unrepresentable: 'any' }) as JsonSchema
  const fallback = v.shown.default ?? (schema.default === undefined ? '–' : `\`${schema.default}\``)
  return [`\`${v.name}\``, accepted(v, schema), fallback, v.meaning]
}

/** A Markdown table with its columns padded to one width, as a formatter would leave it. */
function table(head: string[], rows: string[][]): string {
  const all = [head, ...rows]
  for (const cells of all) {
    const bad = cells.find((c) => c.includes('|') || c.includes('\n'))
    if (bad !== undefined) throw new Error(`a table cell may not hold | or a line break: ${bad}`)
  }
  const widths = head.map((_, i) => Math.max(...all.map((cells) => cells[i]!.length)))
  const line = (cells: string[]) => `| ${cells.map((c, i) => c.padEnd(widths[i]!)).join(' | ')} |`
  return [line(head), `| ${widths.map((w) => '-'.repeat(w)).join(' | ')} |`, ...rows.map(line)].join('\n')
}

/** The whole file: `current`'s text up to and including the marker line, then a section per domain. */
export function configurationDoc(current: string): string {
  const at = current.indexOf(generatedMarker)
  if (at < 0) throw new Error(`docs/configuration.md has no marker line (${generatedMarker}): the generator keeps only what is above it`)
  const parts = Object.values(sections).map((s) => {
    const rows = variablesOf(s.variables).map(row)
    return [`## ${s.title}`, ...('intro' in s ? [s.intro] : []), table(['variable', 'values', 'default', 'meaning'], rows)].join('\n\n')
  })
  return `${current.slice(0, at)}${generatedMarker}\n\n${parts.join('\n\n')}\n`
}
