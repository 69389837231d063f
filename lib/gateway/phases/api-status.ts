/** The API status phase: blocked APIs answer 700700 (spec 002 part 3), retired ones their own fault. */
import { ApiCode, GatewayOwnCode, fault } from '../../faults';
import type { CompiledApi } from '../router';
import { CONTINUE, stop, type CallContext, type Outcome } from './context';

export function apiStatusPhase(ctx: CallContext): Outcome {
  switch ((ctx.api as CompiledApi).def.state) {
    case 'BLOCKED':
      return stop(fault(ApiCode.API_BLOCKED)); // spec 002 part 3: 700700, HTTP 503
    case 'RETIRED':
      return stop(fault(GatewayOwnCode.API_RETIRED));
    default:
      // PUBLISHED, PROTOTYPED and DEPRECATED are served.
      return CONTINUE;
  }
}
