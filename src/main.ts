/** Entry point: serve with the configuration from the environment. */
import { serve } from './serve.js';

serve().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
