/** Worker side of TsnePool (src/tsne/pool.ts): the t-SNE stages' jobs (src/tsne/work.ts). */
import { serveTasks, tsneTask } from './work.js';

serveTasks((m) => void tsneTask(m));
