// `npm start` and the container's CMD run dist/server.js: the HTTP service, src/main/serve.ts.
import './main/serve.js';
