// TRMNL devices, which poll over HTTP instead of holding an MQTT connection (docs/trmnl.md).
import { type Section, integer, variable } from './variables.js'

export const trmnl = {
  title: 'TRMNL',
  intro: 'See [trmnl.md](trmnl.md).',
  variables: {
    trmnl: {
      refreshSeconds: variable(
        'TRMNL_REFRESH_SECONDS',
        integer(5, 86_400, 900),
        'seconds between polls asked of TRMNL devices (`refresh_rate`; shortened to the next scheduled change, stretched over sleep windows)',
      ),
      marginSeconds: variable(
        'TRMNL_OFFLINE_MARGIN_SECONDS',
        integer(0, 86_400, 300),
        'how late past its refresh interval a TRMNL device may poll before it is marked offline (`poll_overdue`)',
      ),
    },
  },
} satisfies Section
