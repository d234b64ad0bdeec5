import type { BindingProcess } from '../process.js';
import type { ProxyArgs } from './options.js';
import type { IdlePoll } from './poll.js';

export interface GatewayOptions {
  args: ProxyArgs;
  binding: BindingProcess;
  poll: IdlePoll;
  onDrop: (reason: string) => void;
}

export async function runGateway(_o: GatewayOptions): Promise<void> {
  throw new Error('not yet');
}
