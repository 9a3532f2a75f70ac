// TRMNL recipes (issue 35): import a project in trmnlp's layout as a screen, and the stylesheet
// for the framework classes its markup uses.
export { RecipeError } from './errors.js'
export { type ImportedRecipe, importRecipe } from './import.js'
export { trmnlFrameworkCss } from './framework-css.js'
