/**
 * The base of every error throughway throws off the request path (configuration, start-up, stores, key
 * stores, the command line, programming errors): a `code` that docs/operations.md lists under "Error
 * codes", and a `name` that is the class's own. The request path answers with faults instead
 * (lib/faults, docs/faults.md). test/unit/error-codes.test.ts reads every subclass's `code` type from the
 * sources and pins each code against docs/operations.md; the lint rule forbids `throw new Error(` and
 * classes extending `Error` directly (docs/architecture.md, "House rules a machine keeps").
 */
export abstract class ThroughwayError extends Error {
  /** A documented code: a string literal type, or a union of them, in each subclass. */
  abstract readonly code: string;
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}

/**
 * A misuse of an internal interface or a state the code never reaches (a programming error, not bad
 * input): code `ERR_INTERNAL`, with what was misused in the message.
 */
export class InternalError extends ThroughwayError {
  readonly code = 'ERR_INTERNAL';
}

/** A command line that cannot be read (an unknown option, a missing value or word): code `CLI_USAGE`; the command exits with status 2. */
export class UsageError extends ThroughwayError {
  readonly code = 'CLI_USAGE';
}
