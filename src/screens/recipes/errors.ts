// Import errors carry a code the screens API can return as is: RECIPE_INVALID for a project that
// is broken or incomplete, RECIPE_UNSUPPORTED for a valid TRMNL feature this service lacks.

export type RecipeErrorCode = 'RECIPE_INVALID' | 'RECIPE_UNSUPPORTED'

export class RecipeError extends Error {
  readonly code: RecipeErrorCode
  constructor(code: RecipeErrorCode, message: string) {
    super(message)
    this.code = code
  }
}
