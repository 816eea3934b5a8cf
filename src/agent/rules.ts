// Which rule handles an event: the first, in the order written, whose every condition holds.
import { affects, type ScheduledEvent } from '../client/index.js';
import { compileDescription } from './config.js';
import type { Rule } from './types.js';

// Compiled once per rule; a reloaded config brings new Rule objects and so new entries.
const patterns = new WeakMap<Rule, RegExp>();

function descriptionPattern(rule: Rule, source: string): RegExp {
  let re = patterns.get(rule);
  if (re === undefined) {
    re = compileDescription(source);
    patterns.set(rule, re);
  }
  return re;
}

function oneOf(allowed: readonly string[] | null, value: string | null): boolean {
  if (allowed === null) return true;
  if (value === null) return false;
  const v = value.toLowerCase();
  return allowed.some((a) => a.toLowerCase() === v);
}

export function ruleMatches(rule: Rule, event: ScheduledEvent, vmName: string): boolean {
  const m = rule.match;
  if (!oneOf(m.eventType, event.type)) return false;
  if (!oneOf(m.eventSource, event.source)) return false;
  if (!oneOf(m.status, event.status)) return false;
  if (m.durationInSeconds !== null) {
    // An unknown duration (-1) is never taken as short: it could be anything.
    const d = event.durationInSeconds;
    if (d < 0) return false;
    if (m.durationInSeconds.min !== null && d < m.durationInSeconds.min) return false;
    if (m.durationInSeconds.max !== null && d > m.durationInSeconds.max) return false;
  }
  if (m.affectsThisVm !== null && affects(event, vmName) !== m.affectsThisVm) return false;
  if (m.description !== null && !descriptionPattern(rule, m.description).test(event.description)) return false;
  return true;
}

/** The first rule that matches, or null. */
export function matchRule(rules: readonly Rule[], event: ScheduledEvent, vmName: string): Rule | null {
  return rules.find((rule) => ruleMatches(rule, event, vmName)) ?? null;
}
