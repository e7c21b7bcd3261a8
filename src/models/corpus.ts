/**
 * Training text for the generated models' byte-level BPE tokenizer.
 * Written for this project (English and Chinese); the merge list learned from it
 * is part of every generated model, so changing a single character changes the models.
 */
export const TOKENIZER_CORPUS: readonly string[] = [
  `The lighthouse keeper wrote in her notebook every evening. She counted the ships that passed, the gulls that landed on the rail, and the hours the lamp burned before dawn. When the storm came in October, she wrote only one line: the light stayed on.`,
  `A good friend listens before giving advice. When someone tells you about a hard day, ask what happened, wait for the answer, and notice how they feel. Patience is a quiet kind of kindness, and people remember it long after they forget the words.`,
  `The team met on Monday to plan the garden. Maria wanted tomatoes and beans, Tom wanted sunflowers, and the children wanted a pumpkin patch. They agreed to share the work: everyone would water the plants on a different day of the week.`,
  `Learning to cook takes time. You burn the rice, you forget the salt, and the bread does not rise. Then one morning the soup tastes right, and you understand that the mistakes were part of the recipe all along.`,
  `In the small town library, the clock above the door was always five minutes late. Nobody fixed it, because the librarian said it gave readers five more minutes with their books.`,
  `He apologized to his brother after the argument. It was not easy to say that he had been wrong, but he felt lighter afterwards, and they laughed about it at dinner.`,
  `Numbers tell part of the story: 3 trains, 12 stations, 240 passengers each hour. The rest of the story is the people who wait on the platform, reading, talking, or watching the rain.`,
  `When you are curious, you ask questions. Why does the river bend here? How do birds find their way home? What would happen if we tried a different way? Curiosity turns an ordinary walk into an adventure.`,
  `She organized her desk before starting the report: pens on the left, papers on the right, a cup of tea in the middle. Order helped her think, and the report was finished before lunch.`,
  `Trust grows slowly. You keep small promises, you arrive on time, you return what you borrow. One day your neighbor hands you the keys to her house while she travels, and you realize that trust has been built.`,
  `The students worked together on the science project. One measured the water, one recorded the temperature, and one drew the chart. Their teacher said the best part was how well they cooperated.`,
  `Feeling nervous before a performance is normal. Breathe slowly, think of the first line, and remember that the audience wants you to do well.`,
  `他每天早上六点起床，先喝一杯热水，然后去公园散步。公园里有很多老人在打太极拳，也有孩子在跑步。他说，早上的空气最新鲜，心情也最好。`,
  `朋友之间要互相信任。遇到困难的时候，真正的朋友会主动帮助你，而不是只说好听的话。我们也应该学会倾听，理解别人的感受。`,
  `这个城市的图书馆很大，里面有很多中文书和外文书。周末的时候，很多学生来这里学习，安静地看书、写作业、准备考试。`,
  `妈妈做的饭菜最好吃。她常说，做饭需要耐心，火候和时间都很重要。我小时候总在厨房里看她做饭，现在我也会做几道家常菜了。`,
  `团队合作需要沟通。每个人都有自己的想法，我们要尊重不同的意见，一起讨论，找到最好的办法。`,
  `下雨的时候，她喜欢坐在窗边读书，听雨声，喝一杯茶。她觉得这是一天中最放松的时刻。`,
  `Good morning! How are you today? I am fine, thank you. The weather is nice, so we can walk to the market and buy fresh fruit, bread, and cheese for the picnic.`,
  `The engineer checked the bridge twice. Safety comes first, she said, and a careful check today saves trouble tomorrow. Her colleagues agreed and signed the report.`,
  `Some people find it easy to start a conversation with strangers; others prefer to listen. Both are valuable. A group needs people who speak and people who think before they speak.`,
  `The old man planted an apple tree even though he knew he might never eat its fruit. When his granddaughter asked why, he smiled and said that someone planted the trees he ate from as a child.`,
];
