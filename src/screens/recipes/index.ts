// TRMNL recipes (issue 35): import a project in trmnlp's layout as a screen, and the stylesheet
// for the framework classes its markup uses. The screens service imports errors.js and
// framework-css.js itself and import.js at the first import (liquidjs and yaml load with it).
export { importRecipe } from './import.js'
export { trmnlFrameworkCss } from './framework-css.js'
