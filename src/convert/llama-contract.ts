/** Temporary: the Llama writer contract's types until src/models/llama-onnx lands. */
export interface LlamaSpec {
  layers: number; hidden: number; intermediate: number;
  heads: number; kvHeads: number; headDim: number;
  vocab: number;
  rmsNormEps: number;
  ropeTheta: number;
  ropeScaling: Record<string, unknown> | null;
  maxPositions: number;
  tiedEmbeddings: boolean;
  bosTokenId?: number | null; eosTokenId?: number | number[] | null; padTokenId?: number | null;
  modelType?: string;
}
export interface LlamaWeightSource {
  shape(name: string): number[];
  rows(name: string, r0: number, r1: number): Float32Array;
  nbits?(name: string): NbitsBlocks | null;
}
export interface NbitsBlocks {
  bits: 4 | 8; blockSize: number;
  weights: Uint8Array;
  scales: Float32Array;
  zeroPoints: Uint8Array | null;
  mins?: Float32Array | null;
}
