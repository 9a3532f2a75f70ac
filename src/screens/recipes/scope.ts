// TRMNL renders a recipe with its polled JSON at the top level (`{{ stories }}`) and its
// settings under `trmnl`; our screens render every template with `data`, `variables` and
// `device` only. Rather than asking the renderer for a second scope, the importer rewrites each
// free variable of the recipe once, found by liquidjs's own static analysis (so a name bound by
// `assign`, `capture` or `for` is left alone): `stories` becomes `data.stories`, `trmnl.user`
// becomes `variables.trmnl.user`, and `trmnl.device.width` the frame's own `device.width`.
import { Liquid } from 'liquidjs'
import { RecipeError } from './errors.js'

/** What the polled answer's rows are called when it was a JSON array: TRMNL wraps it as {data: [...]}. */
export const ROWS_NAME = 'trmnl_rows__'

/** trmnl.device.* fields the frame's context knows; the others stay the imported defaults. */
const DEVICE_FIELDS: Record<string, string> = {
  width: 'device.width',
  height: 'device.height',
  percent_charged: 'device.batteryPercent',
  friendly_id: 'device.id',
}

const liquid = new Liquid()

function offsetsOfRows(source: string): number[] {
  const starts = [0]
  for (let i = 0; i < source.length; i++) if (source[i] === '\n') starts.push(i + 1)
  return starts
}

/**
 * Rewrites the free variables of `source`; `variableRoots` are the names that live in the
 * screen's variables (trmnl, custom fields, the project's variables), every other free name
 * reads the screen's data. Throws RecipeError naming `file` when the template does not parse.
 */
export function scopeTemplate(source: string, variableRoots: ReadonlySet<string>, file: string): string {
  let globals: Record<string, { segments: unknown[]; location: { row: number; col: number } }[]>
  try {
    globals = liquid.analyzeSync(liquid.parse(source), { partials: false }).globals
  } catch (err) {
    throw new RecipeError('RECIPE_INVALID', `${file} is not a valid Liquid template: ${(err as Error).message}`)
  }
  const rows = offsetsOfRows(source)
  const edits = new Map<number, { length: number; text: string }>()
  for (const [root, uses] of Object.entries(globals)) {
    for (const use of uses) {
      const offset = rows[use.location.row - 1]! + use.location.col - 1
      const bracketed = source[offset] === '['
      if (root === 'trmnl') {
        const device = /^trmnl\s*\.\s*device\s*\.\s*(\w+)\b/.exec(source.slice(offset))
        const mapped = device ? DEVICE_FIELDS[device[1]!] : undefined
        if (device && mapped) {
          edits.set(offset, { length: device[0].length, text: mapped })
          continue
        }
      }
      if (root === 'data' && !bracketed) {
        edits.set(offset, { length: 'data'.length, text: ROWS_NAME })
        continue
      }
      const scope = variableRoots.has(root) ? 'variables' : 'data'
      edits.set(offset, { length: 0, text: bracketed ? scope : `${scope}.` })
    }
  }
  let out = source
  for (const offset of [...edits.keys()].sort((a, b) => b - a)) {
    const edit = edits.get(offset)!
    out = out.slice(0, offset) + edit.text + out.slice(offset + edit.length)
  }
  return out
}
