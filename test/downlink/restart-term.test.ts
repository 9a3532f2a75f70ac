// Prompts for sleeping devices survive a clean restart of the service: see test/helpers/restart.ts.
import t from 'tap'
import { restartScenario, stopName } from '../helpers/restart.js'

t.test(`every acknowledged prompt reaches its sleeping device after a ${stopName('SIGTERM')}`, (t) => restartScenario(t, 'SIGTERM'))
