/** Entry of the console bundle (scripts/build.mjs buildConsole). */
import '@picocss/pico/css/pico.min.css';
import './styles.css';
import { render } from 'preact';
import { App } from './app.js';

const root = document.getElementById('app');
if (root) render(<App />, root);
