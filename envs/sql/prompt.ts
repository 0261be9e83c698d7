import type { EnvPrompt } from '../../src/agents/index.js';

/** What LLM strategies are told about this env. */
export const SQL_PROMPT: EnvPrompt = {
  language: 'SQL',
  fence: 'sql',
  system: 'a MySQL database',
  submitRule: 'Reply with `submit` when the result of your last query answers the question.',
  feedsReward: true,
  syntax: { fenceTags: ['sql', 'mysql'], unfenced: 'sql', singleStatement: true },
  reactExample: `Question: Which city hosts the most stadiums?
Thought: I do not know the tables yet; I should list them.
Action: execute[SHOW TABLES]
Observation: [('stadium',), ('team',)]
Thought: The stadium table should have a city column. Let me check its columns.
Action: execute[DESCRIBE stadium]
Observation: [('id', 'int', 'NO', 'PRI', None, ''), ('name', 'text', 'YES', '', None, ''), ('city', 'text', 'YES', '', None, '')]
Thought: I can group stadiums by city and keep the largest group.
Action: execute[SELECT city FROM stadium GROUP BY city ORDER BY COUNT(*) DESC LIMIT 1]
Observation: [('Leeds',)]
Thought: The result is the city with the most stadiums.
Action: submit`,
  planExample: `Question: List the names of employees hired after 2020.
Plan:
1. Show the tables to find the one about employees.
2. Describe that table to find the name and hiring-date columns.
3. Select the names whose hiring date is after 2020.
Question: What is the average price of products in each category?
Plan:
1. Show the tables to find the products table.
2. Describe it to find the price and category columns.
3. Group the products by category and average their price.`,
};
