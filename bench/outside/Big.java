// SPDX-License-Identifier: MIT (bench/outside: one of the sweep's programs)
import java.util.*; import java.util.concurrent.*;
public class Big {
  public static void main(String[] a) throws Exception {
    HashMap<Integer,String> m = new HashMap<>();
    for (int i = 0; i < 1000000; i++) m.put(i, "v" + (i * 7));
    ExecutorService ex = Executors.newFixedThreadPool(4);
    List<Future<Long>> fs = new ArrayList<>();
    for (int t = 0; t < 8; t++) { final int tt = t; fs.add(ex.submit(() -> { long s = 0; int[] arr = new int[2000000]; for (int i = 0; i < arr.length; i++) arr[i] = i ^ tt; for (int i = tt; i < 1000000; i += 8) s += m.get(i).length() + arr[i]; return s; })); }
    long tot = 0; for (Future<Long> f : fs) tot += f.get(); ex.shutdown();
    int[] x = null; try { System.out.println(x[0]); } catch (NullPointerException e) { tot++; }
    System.out.println(m.size() + " " + tot);
  }
}
