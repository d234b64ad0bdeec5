#!/usr/bin/env node
// The `trustgate` command (package.json `bin`; host configs point at dist/cli.js): src/main/commands.ts.
import './main/commands.js';
