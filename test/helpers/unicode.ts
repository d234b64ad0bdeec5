/** Unicode the hostile tests hide values behind, read from the engine's Unicode data (not a hand-made list). */

/** Every code point Unicode says is drawn as nothing (Default_Ignorable_Code_Point): zero-width, bidirectional and invisible controls, variation selectors, fillers, tags. */
export const IGNORABLES: readonly number[] = (() => {
  const out: number[] = [];
  const di = /^\p{Default_Ignorable_Code_Point}$/u;
  for (let cp = 0x80; cp <= 0x10ffff; cp++) if ((cp < 0xd800 || cp > 0xdfff) && di.test(String.fromCodePoint(cp))) out.push(cp);
  return out;
})();

/** `t` (ASCII) written in tag characters (U+E0020..U+E007E: drawn as nothing, each standing for an ASCII character, which a model reads). */
export const inTags = (t: string): string => Array.from(t, (c) => String.fromCodePoint(0xe0000 + c.charCodeAt(0))).join('');
