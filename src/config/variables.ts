// Each environment variable is declared once, here or in a domain's src/config/<domain>.ts: its
// name, its zod schema (type, default, allowed values, how the text becomes a value) and what it
// means. Reading the environment, the error messages and docs/configuration.md all derive from
// these declarations, so none of them can drift from the others.
import { z } from 'zod'

type Shown = {
  /** The default as the documentation states it, for one the schema cannot hold (derived from other settings, generated, machine-dependent). */
  default?: string
  /** The accepted values as the documentation states them, where the schema's type says too little (a comma list, a size). */
  values?: string
}

export class Variable<S extends z.ZodType = z.ZodType> {
  constructor(
    readonly name: string,
    readonly schema: S,
    /** The documentation's "meaning" cell (Markdown, one line). */
    readonly meaning: string,
    readonly shown: Shown = {},
  ) {}
}

export function variable<S extends z.ZodType>(name: string, schema: S, meaning: string, shown?: Shown): Variable<S> {
  return new Variable(name, schema, meaning, shown)
}

/**
 * Variables by the Config field each one fills: nested objects are nested fields, so a domain's
 * settings object is the declarations read, with only derived fields written by hand.
 */
export type Declarations = { readonly [field: string]: Variable | Declarations }

/** What reading `D` gives: each variable's parsed value under its field. */
export type Values<D extends Declarations> = {
  -readonly [K in keyof D]: D[K] extends Variable<infer S> ? z.output<S> : D[K] extends Declarations ? Values<D[K]> : never
}

export type Environment = Readonly<Record<string, string | undefined>>

/** Reads every variable of `declarations` from `env`; each value that does not parse adds a problem naming its variable. */
export function readValues<D extends Declarations>(declarations: D, env: Environment, problems: string[]): Values<D> {
  const values: Record<string, unknown> = {}
  for (const [field, declared] of Object.entries(declarations)) {
    if (!(declared instanceof Variable)) {
      values[field] = readValues(declared, env, problems)
      continue
    }
    const parsed = declared.schema.safeParse(env[declared.name])
    if (parsed.success) values[field] = parsed.data
    else problems.push(...parsed.error.issues.map((issue) => `${declared.name}: ${issue.message}`))
  }
  return values as Values<D>
}

/** The variables of `declarations`, in declaration order. */
export function variablesOf(declarations: Declarations): Variable[] {
  return Object.values(declarations).flatMap((d) => (d instanceof Variable ? [d] : variablesOf(d)))
}

/** A domain's part of the configuration reference: a heading, an optional paragraph, its variables. */
export type Section = { readonly title: string; readonly intro?: string; readonly variables: Declarations }

// Schemas shared by several domains.

/** Trims a value; blank (an empty line in an environment file) counts as unset. For z.preprocess. */
export const blankAsUnset = (v: unknown) => (typeof v === 'string' ? v.trim() || undefined : v)

export const port = (fallback: number) => z.coerce.number().int().min(0).max(65535).default(fallback)

/** A whole number in [min, max] (max optional), `fallback` when unset. */
export const integer = (min: number, max: number | undefined, fallback: number) =>
  (max === undefined ? z.coerce.number().int().min(min) : z.coerce.number().int().min(min).max(max)).default(fallback)

/** `true` or `false`, read as a boolean. */
export const flag = (fallback: boolean) =>
  z
    .enum(['true', 'false'])
    .default(fallback ? 'true' : 'false')
    .transform((v) => v === 'true')

/** A comma-separated list, each item trimmed, empty items dropped. */
export const list = z
  .string()
  .optional()
  .transform((v) =>
    (v ?? '')
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean),
  )

export const optionalUrl = z.preprocess(blankAsUnset, z.string().url().optional())

export const optionalText = z.preprocess(blankAsUnset, z.string().optional())

/** An optional secret or name taken as given (a blank one is still blank: the domain decides). */
export const optionalString = z.string().optional()
