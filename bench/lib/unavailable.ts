// A scenario that cannot run on this machine (a peer not installed, a service not running, a
// limit too low for its fleet) throws this: the run goes on, prints why it skipped the scenario,
// and still exits 0. Any other error is a failure.
export class Unavailable extends Error {
  override name = 'Unavailable'
}
