/**
 * A store that fails chosen calls: the fault-injecting wrapper the style guide asks
 * for, built on the same decorator as round-trip counting.
 */
import { StoreDecorator, type StoreCall } from '../../src/store/store-decorator.js';

/** Decides whether a call fails. */
export type FaultRule = (call: StoreCall) => boolean;

/** Fails every call a rule matches with `InjectedFault`, until the rule is cleared. */
export class FaultyStore extends StoreDecorator {
  private rule: FaultRule | null = null;
  readonly calls: StoreCall[] = [];

  failWhen(rule: FaultRule | null): void {
    this.rule = rule;
  }

  protected async around<T>(call: StoreCall, run: () => Promise<T>): Promise<T> {
    this.calls.push(call);
    if (this.rule?.(call)) throw new InjectedFault(`injected fault on ${call.operation} ${call.table ?? ''}`);
    return run();
  }
}

/** The error FaultyStore throws. */
export class InjectedFault extends Error {
  override readonly name = 'InjectedFault';
}
