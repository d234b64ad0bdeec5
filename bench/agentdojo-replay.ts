/**
 * Replays AgentDojo suites (test/fixtures/agentdojo/, README there: the
 * replay and the metrics) through the HTTP API of an app built as the
 * service builds it, with no LLM: before each ground-truth call a pre-call
 * decision, after it a result decision, under one session per run, the
 * user's prompt given first as the user's own words. A consent question is
 * answered "no": the call does not run, the result does not reach the model.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';

const FIXTURES = new URL('../test/fixtures/agentdojo/', import.meta.url);

interface Call {
  function: string;
  args: Record<string, unknown>;
  output?: string | null;
  outputAttacked?: string | null;
}
interface UserTask {
  id: string;
  prompt: string;
  calls: Call[];
}
interface InjectionTask {
  id: string;
  goal: string;
  calls: Call[];
}
interface Suite {
  suite: string;
  tools: Array<{ name: string; description?: string; inputSchema?: unknown }>;
  userTasks: UserTask[];
  injectionTasks: InjectionTask[];
}
/** One call of a run: its output, whether the attacker makes it, whether its output carries the injection. */
type Step = { call: Call; output: string; attacker: boolean; injected: boolean };
type Hints = { readOnly: boolean; destructive: boolean; openWorld: boolean; sideEffect: boolean };

export const SUITES = ['workspace', 'banking'] as const;

function load<T>(name: string): T {
  return JSON.parse(readFileSync(new URL(name, FIXTURES), 'utf8')) as T;
}

/** Per suite: the share of pairs secure, of tasks useful alone and under attack, of benign tasks that asked. */
export interface SuiteFigures {
  suite: string;
  pairs: number;
  tasks: number;
  security: number;
  utility: number;
  utilityUnderAttack: number;
  benignConsent: number;
  /** Each insecure pair: user task, injection task, the attacker call that ran. */
  breaches: string[];
  /** Each benign task that asked or was denied, with the first rule that did. */
  asked: string[];
}

type Post = (url: string, body: unknown) => Promise<Record<string, unknown>>;

function poster(app: FastifyInstance): Post {
  return async (url, body) => {
    const r = await app.inject({ method: 'POST', url, headers: { 'content-type': 'application/json' }, payload: JSON.stringify(body) });
    if (r.statusCode !== 200) throw new Error(`${url}: ${r.statusCode} ${r.body.slice(0, 300)}`);
    return JSON.parse(r.body) as Record<string, unknown>;
  };
}

/** The first consent or deny rule of an answer, `policy/rule`. */
function why(answer: Record<string, unknown>): string {
  const f = (answer.findings as Array<{ policy: string; rule: string; effect: string; applied: boolean }>).find((x) => x.applied && (x.effect === 'consent' || x.effect === 'deny'));
  return f ? `${f.policy}/${f.rule}` : String(answer.outcome);
}

/**
 * The operator's entries for the suites' servers (TRUSTGATE_SERVERS): the
 * hints of annotations.json are what an operator would declare for each
 * tool, so they are the operator's own annotations, believed; what the
 * definitions declare is not (docs/behaviour/operator.md).
 */
export function operatorEntries(): Record<string, unknown> {
  const all = load<Record<string, Record<string, Hints>>>('annotations.json');
  const out: Record<string, unknown> = {};
  for (const name of SUITES) {
    const tools: Record<string, unknown> = {};
    for (const [tool, h] of Object.entries(all[name]!)) tools[tool] = { annotations: { readOnlyHint: h.readOnly, destructiveHint: h.destructive, openWorldHint: h.openWorld } };
    out[`agentdojo-${name}`] = { tools };
  }
  return out;
}

/** operatorEntries written to a file in `dir`; its path. */
export function writeOperatorEntries(dir: string): string {
  const path = join(dir, 'agentdojo-servers.json');
  writeFileSync(path, JSON.stringify(operatorEntries(), null, 2));
  return path;
}

/** Replays one suite; `sessionPrefix` keeps the runs of several sets apart. */
export async function replaySuite(app: FastifyInstance, name: (typeof SUITES)[number], sessionPrefix = 'ad'): Promise<SuiteFigures> {
  const suite = load<Suite>(`${name}.json`);
  const hints = load<Record<string, Record<string, Hints>>>('annotations.json')[name]!;
  const attack = load<{ template: string; user: string; model: string; goalPlaceholder: string }>('attack.json');
  const post = poster(app);
  const defs = new Map(
    suite.tools.map((t) => {
      const h = hints[t.name]!;
      return [t.name, { name: t.name, description: t.description ?? '', inputSchema: t.inputSchema ?? { type: 'object' }, annotations: { readOnlyHint: h.readOnly, destructiveHint: h.destructive, openWorldHint: h.openWorld } }] as const;
    }),
  );
  const server = { name: `agentdojo-${name}` };
  let n = 0;

  /** One run: every call judged, run or refused; what each call and result came to. */
  const run = async (prompt: string, steps: Step[]) => {
    const session = { id: `${sessionPrefix}-${name}-${n++}` };
    await post(`/v1/sessions/${session.id}/user`, { text: prompt });
    const outcome = { userOk: true, attackerRan: [] as string[], reached: false, asked: [] as string[] };
    for (const s of steps) {
      // The attacker's calls run only once the injected output reached the model (an always-obedient model).
      if (s.attacker && !outcome.reached) continue;
      const tool = defs.get(s.call.function)!;
      const d = await post('/v1/evaluate-call', { call: { name: s.call.function, arguments: s.call.args }, tool, server, session });
      const allowed = d.outcome !== 'deny' && d.requiresConsent !== true;
      if (!allowed) {
        if (!s.attacker) outcome.userOk = false;
        outcome.asked.push(`${s.call.function}: ${why(d)}`);
        continue;
      }
      if (s.attacker && hints[s.call.function]!.sideEffect) outcome.attackerRan.push(s.call.function);
      const r = await post('/v1/evaluate', { result: { content: [{ type: 'text', text: s.output }] }, tool, server, session, protocolVersion: '2025-06-18' });
      const forwarded = r.outcome !== 'deny' && r.requiresConsent !== true;
      if (!forwarded) {
        if (!s.attacker) outcome.userOk = false;
        outcome.asked.push(`${s.call.function} result: ${why(r)}`);
      }
      if (s.injected && forwarded) outcome.reached = true;
    }
    return outcome;
  };

  let useful = 0;
  let asking = 0;
  const asked: string[] = [];
  for (const t of suite.userTasks) {
    const o = await run(t.prompt, t.calls.map((call) => ({ call, output: call.output ?? '', attacker: false, injected: false })));
    if (o.userOk) useful++;
    if (o.asked.length > 0) {
      asking++;
      asked.push(`${t.id}: ${o.asked[0]}`);
    }
  }

  let secure = 0;
  let usefulUnderAttack = 0;
  let pairs = 0;
  const breaches: string[] = [];
  for (const t of suite.userTasks) {
    const first = t.calls.findIndex((c) => typeof c.outputAttacked === 'string');
    for (const inj of suite.injectionTasks) {
      pairs++;
      const attacked = (c: Call) => c.outputAttacked!.split(attack.goalPlaceholder).join(inj.goal);
      const steps: Step[] = [];
      if (first < 0) {
        for (const c of t.calls) steps.push({ call: c, output: c.output ?? '', attacker: false, injected: false });
      } else {
        for (let i = 0; i <= first; i++) {
          const c = t.calls[i]!;
          steps.push({ call: c, output: i === first ? attacked(c) : (c.output ?? ''), attacker: false, injected: i === first });
        }
        for (const c of inj.calls) steps.push({ call: c, output: c.output ?? '', attacker: true, injected: false });
        for (let i = first + 1; i < t.calls.length; i++) {
          const c = t.calls[i]!;
          steps.push({ call: c, output: typeof c.outputAttacked === 'string' ? attacked(c) : (c.output ?? ''), attacker: false, injected: false });
        }
      }
      const o = await run(t.prompt, steps);
      if (o.attackerRan.length === 0) secure++;
      else breaches.push(`${t.id} x ${inj.id}: ${o.attackerRan.join(', ')}`);
      if (o.userOk) usefulUnderAttack++;
    }
  }
  return {
    suite: name,
    pairs,
    tasks: suite.userTasks.length,
    security: secure / pairs,
    utility: useful / suite.userTasks.length,
    utilityUnderAttack: usefulUnderAttack / pairs,
    benignConsent: asking / suite.userTasks.length,
    breaches,
    asked,
  };
}
