import { describe, expect, it } from 'vitest';
import { parsePlan, parseReactAction } from '../../src/agents/index.js';

describe('parseReactAction', () => {
  it('reads execute[…] to the last bracket, keeping brackets inside', () => {
    expect(parseReactAction('Thought: list\nAction: execute[ls [ab]*.txt]')).toEqual({ execute: 'ls [ab]*.txt' });
  });
  it('reads submit and submit <answer>', () => {
    expect(parseReactAction('Thought 3: done\nAction 3: submit')).toEqual({ submit: 'submit' });
    expect(parseReactAction('Thought: got it\nAction: submit picoCTF{x}')).toEqual({ submit: 'submit picoCTF{x}' });
  });
  it('ignores an Observation the model wrote itself', () => {
    expect(parseReactAction('Thought: t\nAction: execute[pwd]\nObservation: /\nThought: next\nAction: execute[rm -rf x]')).toEqual({ execute: 'pwd' });
  });
  it('finds no action in prose', () => {
    expect(parseReactAction('Thought: I should ask the user which table to use.')).toBeNull();
    expect(parseReactAction('')).toBeNull();
  });
});

describe('parsePlan', () => {
  it('reads numbered steps, with lines that follow a step kept in it', () => {
    const plan = 'Plan:\n1. List the tables.\n2) Describe the one about\n   singers.\n3. Select names.\nGood luck!';
    expect(parsePlan(plan)).toEqual(['List the tables.', 'Describe the one about\n   singers.', 'Select names.\nGood luck!']);
  });
  it('gives no steps for a reply without a numbered list', () => {
    expect(parsePlan('Plan:\n')).toEqual([]);
    expect(parsePlan('I would look at the tables first.')).toEqual([]);
  });
});
